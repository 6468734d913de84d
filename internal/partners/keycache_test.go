package partners

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestKeyCacheExpiresAndStaysBounded(t *testing.T) {
	c := newKeyCache(3, 50*time.Millisecond)
	c.put("a", &Partner{Name: "A"})
	p, ok := c.get("a")
	require.True(t, ok)
	require.Equal(t, "A", p.Name)
	p.Name = "changed"
	again, _ := c.get("a")
	require.Equal(t, "A", again.Name, "callers get copies")

	for i := range 10 {
		c.put(fmt.Sprint(i), &Partner{})
	}
	require.LessOrEqual(t, len(c.entries), 3)

	time.Sleep(60 * time.Millisecond)
	_, ok = c.get("9")
	require.False(t, ok, "an entry past its TTL is not served")
}
