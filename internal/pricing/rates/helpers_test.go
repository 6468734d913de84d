package rates_test

import (
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

// fakeClock is a manually advanced clock safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func dec(t *testing.T, s string) decimal.Decimal {
	t.Helper()
	d, err := decimal.NewFromString(s)
	require.NoError(t, err)
	return d
}

// requireDecimal checks value equality and that the exact textual form
// survived, which catches any detour through float64.
func requireDecimal(t *testing.T, want string, got decimal.Decimal) {
	t.Helper()
	require.True(t, dec(t, want).Equal(got), "want %s, got %s", want, got)
	require.Equal(t, want, got.String())
}
