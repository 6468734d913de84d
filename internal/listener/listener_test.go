package listener_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/listener"
	"partnerd/internal/webhook/sign"
)

// clock is the fixed time deliveries are signed and checked at.
var clock = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// syncBuffer is an output that the test reads while handlers write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newSecret(t *testing.T) string {
	t.Helper()
	s, err := sign.NewSecret()
	require.NoError(t, err)
	return s
}

func body(id, typ, tx, status string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"type":%q,"created_at":"2026-03-04T05:06:00Z","data":{"id":%q,"status":%q}}`, id, typ, tx, status)
}

// delivery builds a signed POST as the deliverer sends it.
func delivery(t *testing.T, secrets []string, id string, at time.Time, b []byte) *http.Request {
	t.Helper()
	h, err := sign.Headers(secrets, id, at, b)
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(b))
	for k, v := range h {
		r.Header[k] = v
	}
	r.Header.Set("Content-Type", "application/json")
	return r
}

func serve(l *listener.Listener, r *http.Request) int {
	w := httptest.NewRecorder()
	l.ServeHTTP(w, r)
	return w.Code
}

func newListener(t *testing.T, secret string, opts ...listener.Option) (*listener.Listener, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	l, err := listener.New(secret, out, append([]listener.Option{listener.WithClock(func() time.Time { return clock })}, opts...)...)
	require.NoError(t, err)
	return l, out
}

func TestNewRejectsMalformedSecret(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "whsec_", "whsec_!!", "secret"} {
		_, err := listener.New(bad, io.Discard)
		require.ErrorIs(t, err, sign.ErrMalformedSecret, bad)
	}
	_, err := listener.New(newSecret(t), nil)
	require.Error(t, err)
}

func TestPrintsEventOnceAndDedupes(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	l, out := newListener(t, secret)
	id := "5b2f0a64-8c1e-4d7a-9f3b-2c6d1e0a9b47"
	b := body(id, "transaction.completed", "9d1c7e2a-0000-4000-8000-000000000001", "completed")

	require.Equal(t, http.StatusOK, serve(l, delivery(t, []string{secret}, id, clock, b)))
	want := "2026-03-04T05:06:07Z  transaction.completed  " + id +
		"  transaction=9d1c7e2a-0000-4000-8000-000000000001 status=completed\n" +
		"  {\n" +
		"    \"id\": \"" + id + "\",\n" +
		"    \"type\": \"transaction.completed\",\n" +
		"    \"created_at\": \"2026-03-04T05:06:00Z\",\n" +
		"    \"data\": {\n" +
		"      \"id\": \"9d1c7e2a-0000-4000-8000-000000000001\",\n" +
		"      \"status\": \"completed\"\n" +
		"    }\n" +
		"  }\n"
	require.Equal(t, want, out.String())

	// A redelivery is a later attempt of the same event: a new timestamp and
	// signature, the same webhook id.
	require.Equal(t, http.StatusOK, serve(l, delivery(t, []string{secret}, id, clock.Add(time.Minute), b)))
	require.Equal(t, want+"duplicate "+id+" ignored\n", out.String())
}

func TestRejectsUnverifiedDeliveries(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	b := body("e1", "deposit.detected", "tx-1", "pending")

	for name, tc := range map[string]struct {
		req  func(t *testing.T) *http.Request
		code int
		line string
	}{
		"bad signature": {
			req:  func(t *testing.T) *http.Request { return delivery(t, []string{newSecret(t)}, "e1", clock, b) },
			code: http.StatusBadRequest,
			line: "rejected e1 from 192.0.2.1:1234: " + sign.ErrNoMatchingSignature.Error(),
		},
		"tampered body": {
			req: func(t *testing.T) *http.Request {
				r := delivery(t, []string{secret}, "e1", clock, b)
				r.Body = io.NopCloser(bytes.NewReader(body("e1", "deposit.detected", "tx-2", "pending")))
				return r
			},
			code: http.StatusBadRequest,
			line: "rejected e1 from 192.0.2.1:1234: " + sign.ErrNoMatchingSignature.Error(),
		},
		"stale timestamp": {
			req: func(t *testing.T) *http.Request {
				return delivery(t, []string{secret}, "e1", clock.Add(-6*time.Minute), b)
			},
			code: http.StatusBadRequest,
			line: "rejected e1 from 192.0.2.1:1234: " + sign.ErrBadTimestamp.Error(),
		},
		"future timestamp": {
			req: func(t *testing.T) *http.Request {
				return delivery(t, []string{secret}, "e1", clock.Add(6*time.Minute), b)
			},
			code: http.StatusBadRequest,
			line: "rejected e1 from 192.0.2.1:1234: " + sign.ErrBadTimestamp.Error(),
		},
		"unsigned": {
			req: func(t *testing.T) *http.Request {
				return httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(b))
			},
			code: http.StatusBadRequest,
			line: "rejected - from 192.0.2.1:1234: " + sign.ErrMissingHeaders.Error(),
		},
		"too large": {
			req: func(t *testing.T) *http.Request {
				big := bytes.Repeat([]byte(" "), listener.MaxBody+1)
				return delivery(t, []string{secret}, "e1", clock, big)
			},
			code: http.StatusRequestEntityTooLarge,
			line: fmt.Sprintf("rejected e1 from 192.0.2.1:1234: body larger than %d bytes", listener.MaxBody),
		},
		"control characters": {
			req: func(t *testing.T) *http.Request {
				return delivery(t, []string{newSecret(t)}, "e1\x1b[2J", clock, b)
			},
			code: http.StatusBadRequest,
			line: "rejected e1?[2J from 192.0.2.1:1234: " + sign.ErrNoMatchingSignature.Error(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, out := newListener(t, secret)
			require.Equal(t, tc.code, serve(l, tc.req(t)))
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			require.Len(t, lines, 1, "one line per rejection")
			require.True(t, strings.HasPrefix(lines[0], tc.line), "got %q", lines[0])

			// A rejected delivery is not remembered: the genuine one still prints.
			require.Equal(t, http.StatusOK, serve(l, delivery(t, []string{secret}, "e1", clock, b)))
			require.Contains(t, out.String(), "deposit.detected  e1  transaction=tx-1 status=pending\n")
		})
	}
}

func TestAcceptsBodyOfMaxSize(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	l, out := newListener(t, secret)
	b := body("e1", "deposit.detected", "tx-1", "pending")
	b = append(b, bytes.Repeat([]byte(" "), listener.MaxBody-len(b))...)
	require.Equal(t, http.StatusOK, serve(l, delivery(t, []string{secret}, "e1", clock, b)))
	require.Contains(t, out.String(), "deposit.detected  e1  transaction=tx-1 status=pending\n")
}

func TestOnlyPost(t *testing.T) {
	t.Parallel()
	l, out := newListener(t, newSecret(t))
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodHead} {
		w := httptest.NewRecorder()
		l.ServeHTTP(w, httptest.NewRequest(m, "/", nil))
		require.Equal(t, http.StatusMethodNotAllowed, w.Code, m)
		require.Equal(t, http.MethodPost, w.Header().Get("Allow"))
	}
	require.Empty(t, out.String())
}

func TestRotationAcceptsEitherSecret(t *testing.T) {
	t.Parallel()
	previous, current := newSecret(t), newSecret(t)
	for _, mine := range []string{previous, current} {
		l, out := newListener(t, mine)
		b := body("e2", "transaction.created", "tx-9", "awaiting_deposit")
		require.Equal(t, http.StatusOK, serve(l, delivery(t, []string{current, previous}, "e2", clock, b)))
		require.Contains(t, out.String(), "transaction.created  e2  transaction=tx-9 status=awaiting_deposit\n")

		// Once the overlap ends, only the current secret signs.
		code := serve(l, delivery(t, []string{current}, "e3", clock, body("e3", "transaction.created", "tx-9", "x")))
		if mine == current {
			require.Equal(t, http.StatusOK, code)
		} else {
			require.Equal(t, http.StatusBadRequest, code)
		}
	}
}

func TestServiceHeadersAlone(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	l, out := newListener(t, secret)
	r := delivery(t, []string{secret}, "e4", clock, body("e4", "payout.settled", "tx-4", "completed"))
	for _, h := range []string{sign.HeaderID, sign.HeaderTimestamp, sign.HeaderSignature} {
		r.Header.Del(h)
	}
	require.Equal(t, http.StatusOK, serve(l, r))
	require.Contains(t, out.String(), "payout.settled  e4  transaction=tx-4 status=completed\n")
}

func TestDedupeMemoryIsBounded(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	l, out := newListener(t, secret, listener.WithRemembered(2))
	send := func(id string) {
		require.Equal(t, http.StatusOK, serve(l, delivery(t, []string{secret}, id, clock, body(id, "t", "x", "y"))))
	}
	send("a")
	send("b")
	send("a") // still remembered
	send("c") // evicts a
	send("b") // still remembered
	send("a") // forgotten, so printed again
	var summary []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "duplicate") || strings.Contains(line, "  t  ") {
			summary = append(summary, line)
		}
	}
	require.Equal(t, []string{
		"2026-03-04T05:06:07Z  t  a  transaction=x status=y",
		"2026-03-04T05:06:07Z  t  b  transaction=x status=y",
		"duplicate a ignored",
		"2026-03-04T05:06:07Z  t  c  transaction=x status=y",
		"duplicate b ignored",
		"2026-03-04T05:06:07Z  t  a  transaction=x status=y",
	}, summary)
}

func TestUnreadableBodyStillShown(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	l, out := newListener(t, secret)
	require.Equal(t, http.StatusOK, serve(l, delivery(t, []string{secret}, "e5", clock, []byte("not json\x1b"))))
	require.Equal(t, "2026-03-04T05:06:07Z  (unreadable body)  e5  transaction=- status=-\n  not json?\n", out.String())
}

func TestConcurrentRedeliveriesPrintOnce(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	l, out := newListener(t, secret)
	const events, copies = 20, 5
	var wg sync.WaitGroup
	for e := range events {
		id := fmt.Sprintf("ev-%02d", e)
		b := body(id, "deposit.confirmed", "tx", "processing")
		for c := range copies {
			r := delivery(t, []string{secret}, id, clock.Add(time.Duration(c)*time.Second), b)
			wg.Go(func() {
				w := httptest.NewRecorder()
				l.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					t.Errorf("status %d", w.Code)
				}
			})
		}
	}
	wg.Wait()
	s := out.String()
	require.Equal(t, events, strings.Count(s, "  deposit.confirmed  "))
	require.Equal(t, events*(copies-1), strings.Count(s, " ignored\n"))
	for e := range events {
		require.Equal(t, 1, strings.Count(s, fmt.Sprintf("  ev-%02d  ", e)))
	}
}

// TestRun drives a real server the way the deliverer does, over HTTP.
func TestRun(t *testing.T) {
	t.Parallel()
	previous, current := newSecret(t), newSecret(t)
	out := &syncBuffer{}
	l, err := listener.New(current, out) // the real clock
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- listener.Run(ctx, "127.0.0.1:0", l, func(a string) { addrs <- a }) }()
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("Run stopped before ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run never became ready")
	}
	client := &http.Client{Timeout: 10 * time.Second}

	post := func(secrets []string, id string, at time.Time, b []byte) int {
		t.Helper()
		h, err := sign.Headers(secrets, id, at, b)
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/webhooks", bytes.NewReader(b))
		require.NoError(t, err)
		for k, v := range h {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		require.NoError(t, res.Body.Close())
		return res.StatusCode
	}

	b := body("r1", "transaction.completed", "tx-r", "completed")
	require.Equal(t, http.StatusOK, post([]string{current, previous}, "r1", time.Now(), b))
	require.Equal(t, http.StatusOK, post([]string{current, previous}, "r1", time.Now(), b))
	require.Equal(t, http.StatusBadRequest, post([]string{previous}, "r2", time.Now(), b))
	require.Equal(t, http.StatusBadRequest, post([]string{current}, "r3", time.Now().Add(-10*time.Minute), b))

	big := bytes.Repeat([]byte("x"), listener.MaxBody+1)
	require.Equal(t, http.StatusRequestEntityTooLarge, post([]string{current}, "r4", time.Now(), big))

	res, err := client.Get(base + "/")
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)

	s := out.String()
	require.Equal(t, 1, strings.Count(s, "  transaction.completed  r1  transaction=tx-r status=completed\n"))
	require.Contains(t, s, "duplicate r1 ignored\n")
	require.Contains(t, s, "rejected r2 ")
	require.Contains(t, s, "rejected r3 ")
	require.Contains(t, s, "rejected r4 ")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop after its context ended")
	}
	_, err = client.Post(base+"/", "application/json", strings.NewReader("{}"))
	require.Error(t, err, "the server no longer listens")
}

func TestRunReportsListenError(t *testing.T) {
	t.Parallel()
	l, _ := newListener(t, newSecret(t))
	err := listener.Run(t.Context(), "127.0.0.1:-1", l, func(string) { t.Error("ready called") })
	require.Error(t, err)
}
