package rates

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNewHTTPFeedDefaults(t *testing.T) {
	t.Parallel()
	f, err := NewHTTPFeed(HTTPFeedConfig{
		URL:      "https://user:pw@feed.example/v1/rates?api_key=s3cret#frag",
		Fields:   map[string]string{" USDT ": " data.usdt_ngn "},
		Interval: time.Minute,
	})
	require.NoError(t, err)
	require.NotNil(t, f.client)
	require.Equal(t, 10*time.Second, f.client.Timeout)
	require.Same(t, slog.Default(), f.logger)
	before := time.Now()
	require.False(t, f.now().Before(before))
	require.Equal(t, map[string]string{"usdt": "data.usdt_ngn"}, f.fields)
	require.Equal(t, "https://feed.example/v1/rates", f.safeURL)
}
