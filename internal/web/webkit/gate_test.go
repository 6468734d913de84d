package webkit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/web/webkit"
)

// enterAsync starts an Enter that waits in line and returns where its result
// arrives.
func enterAsync(g *webkit.Gate, sources ...string) <-chan func() {
	out := make(chan func(), 1)
	go func() {
		release, err := g.Enter(context.Background(), sources...)
		if err != nil {
			release = nil
		}
		out <- release
	}()
	return out
}

// inLine reports whether source holds its one place at g: an Enter that gives
// up at once (its context already ended) is refused for the source's share
// rather than for its context.
func inLine(g *webkit.Gate, source string) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Enter(ctx, source)
	return errors.Is(err, webkit.ErrGateBusy)
}

// One source never holds more than its share of places, working or waiting;
// others still get in.
func TestGateLimitsEachSource(t *testing.T) {
	t.Parallel()
	g := webkit.NewGate(4, 8, 2, time.Hour)
	ctx := context.Background()
	r1, err := g.Enter(ctx, "address:a", "account:x")
	require.NoError(t, err)
	r2, err := g.Enter(ctx, "address:a", "account:y")
	require.NoError(t, err)
	_, err = g.Enter(ctx, "address:a", "account:z")
	require.ErrorIs(t, err, webkit.ErrGateBusy, "a third from the same address")
	_, err = g.Enter(ctx, "address:b", "account:x")
	require.NoError(t, err, "another address, an account held once")
	_, err = g.Enter(ctx, "address:c", "account:x")
	require.ErrorIs(t, err, webkit.ErrGateBusy, "a third at the same account")
	r1()
	r1() // a release runs once
	r3, err := g.Enter(ctx, "address:a", "account:z")
	require.NoError(t, err, "a released place is the source's again")
	r2()
	r3()
}

// Past its slots the gate keeps a bounded line, first come first served: a
// release admits the first waiting; a full line refuses at once; a wait ends
// with ErrGateBusy (or the context's error) and gives its places back.
func TestGateLineIsBoundedAndFair(t *testing.T) {
	t.Parallel()
	g := webkit.NewGate(1, 2, 1, time.Hour)
	ctx := context.Background()
	first, err := g.Enter(ctx, "a")
	require.NoError(t, err)
	second := enterAsync(g, "b")
	require.Eventually(t, func() bool { return inLine(g, "b") }, 10*time.Second, time.Millisecond)
	third := enterAsync(g, "c")
	require.Eventually(t, func() bool { return inLine(g, "c") }, 10*time.Second, time.Millisecond)
	_, err = g.Enter(ctx, "d")
	require.ErrorIs(t, err, webkit.ErrGateBusy, "the line is full")

	first()
	release := <-second
	require.NotNil(t, release, "the first in line is admitted")
	select {
	case <-third:
		t.Fatal("one slot: the second in line still waits")
	default:
	}
	release()
	release = <-third
	require.NotNil(t, release)
	release()

	short := webkit.NewGate(1, 1, 1, time.Millisecond)
	held, err := short.Enter(ctx, "a")
	require.NoError(t, err)
	_, err = short.Enter(ctx, "b")
	require.ErrorIs(t, err, webkit.ErrGateBusy, "no place within the wait")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	long := webkit.NewGate(1, 1, 1, time.Hour)
	lheld, err := long.Enter(ctx, "a")
	require.NoError(t, err)
	_, err = long.Enter(cctx, "b")
	require.ErrorIs(t, err, context.Canceled)
	held()
	lheld()
	for _, gt := range []*webkit.Gate{short, long} {
		r, err := gt.Enter(ctx, "b")
		require.NoError(t, err, "a wait that ended gave its places back")
		r()
	}
}
