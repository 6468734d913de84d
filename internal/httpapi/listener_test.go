package httpapi_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/listener"
	"partnerd/internal/testsupport/apitest"
)

// syncBuffer is a goroutine-safe output sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The README's sandbox loop: register an endpoint, run the listener with its secret,
// create a transaction, simulate events, and watch them arrive verified.
func TestSandboxLoopWithListener(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())

		c := env.Client(t, env.NewPartner(t))
		secret := register(t, c, "http://"+addr+"/")
		out := &syncBuffer{}
		l, err := listener.New(secret, out)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- listener.Run(ctx, addr, l, func(string) {}) }()
		t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

		tx := create(t, c, direct("LOOP-1", "bep20", "2000"))
		mustSimulate(t, c, tx.Id, evDetected)
		mustSimulate(t, c, tx.Id, evConfirmed)
		require.Eventually(t, func() bool {
			s := out.String()
			return strings.Contains(s, "transaction.created") && strings.Contains(s, "deposit.detected") && strings.Contains(s, "deposit.confirmed")
		}, 20*time.Second, 50*time.Millisecond, out.String())
		require.NotContains(t, out.String(), "rejected")
		require.Contains(t, out.String(), "transaction="+tx.Id.String())
	})
}
