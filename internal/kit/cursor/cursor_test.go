package cursor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
)

func TestRoundTripAndTamper(t *testing.T) {
	t.Parallel()
	c := NewCodec([]byte("secret"))
	pos := Position{Time: time.Date(2026, 11, 23, 10, 0, 0, 123456000, time.UTC), ID: "abc"}
	cur := c.Encode(pos, "partner|status=completed")

	got, err := c.Decode(cur, "partner|status=completed")
	require.NoError(t, err)
	require.True(t, pos.Time.Equal(got.Time))
	require.Equal(t, pos.ID, got.ID)

	payload, sig, _ := strings.Cut(cur, ".")
	flipped := []byte(payload)
	flipped[3] ^= 1
	for name, bad := range map[string]string{
		"other scope":    cur,
		"altered":        string(flipped) + "." + sig,
		"no signature":   payload,
		"other secret":   NewCodec([]byte("other")).Encode(pos, "partner|status=completed"),
		"garbage":        "!!!",
		"empty position": c.Encode(Position{}, "partner|status=completed"),
	} {
		scope := "partner|status=completed"
		if name == "other scope" {
			scope = "partner|status=cancelled"
		}
		_, err := c.Decode(bad, scope)
		require.Equal(t, apperr.InvalidCursor, apperr.CodeOf(err), name)
	}
}
