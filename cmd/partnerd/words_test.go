package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Counts and durations read as people write them.
func TestWords(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 address", count(1, "address", "addresses"))
	require.Equal(t, "0 addresses", count(0, "address", "addresses"))
	require.Equal(t, "12 addresses", count(12, "address", "addresses"))
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "1 day", 90 * time.Minute: "1 hour 30 minutes", 45 * time.Second: "45 seconds",
		0: "0 seconds", 49*time.Hour + 5*time.Second: "2 days 1 hour 5 seconds", 300 * time.Millisecond: "under a second",
	} {
		require.Equal(t, want, durationWords(d), d.String())
	}
}
