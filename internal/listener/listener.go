// Package listener is the receiver behind `partnerd listen --secret whsec_…
// [--addr :9000]`: a small HTTP server that a partner points a sandbox webhook
// endpoint at (through a tunnel of their choice) to watch events arrive while
// building an integration. It verifies each delivery the way a production receiver
// must (signature, timestamp, deduplication by webhook id), answers the way the
// deliverer expects, and prints every event readably.
package listener

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	"partnerd/internal/webhook/sign"
)

// MaxBody is the largest delivery body read, so that a stray or hostile client
// cannot make the listener buffer without bound; real events are a few KiB.
const MaxBody = 1 << 20

// Tolerance is how far a delivery's timestamp may be from the listener's clock,
// the replay window the Standard Webhooks specification recommends.
const Tolerance = 5 * time.Minute

// DefaultRemembered is how many recent webhook ids are kept for deduplication: far
// more than a local session sees, while bounding memory for a listener left running.
const DefaultRemembered = 10_000

// ShutdownTimeout bounds how long Run waits for requests in flight once its
// context is done, so that stopping the command never hangs.
const ShutdownTimeout = time.Second

// Listener verifies, deduplicates and prints webhook deliveries. It is an
// http.Handler and is safe for concurrent requests.
type Listener struct {
	secret string
	out    io.Writer
	now    func() time.Time
	limit  int

	mu   sync.Mutex // guards seen, ring, next and writes to out
	seen map[string]struct{}
	ring []string // the remembered ids in arrival order, oldest evicted first
	next int      // where the next id goes in ring once it is full
}

// Option adjusts a Listener, mainly so tests can control time and memory.
type Option func(*Listener)

// WithClock sets the clock the timestamps of deliveries are checked against and
// the arrival times are printed from, so tests can replay fixed deliveries.
func WithClock(now func() time.Time) Option {
	return func(l *Listener) {
		if now != nil {
			l.now = now
		}
	}
}

// WithRemembered sets how many recent webhook ids are kept for deduplication
// (DefaultRemembered when n is not positive).
func WithRemembered(n int) Option {
	return func(l *Listener) { l.limit = n }
}

// New returns a Listener that accepts deliveries signed with secret and prints
// them to out. It refuses a malformed secret now rather than rejecting every
// delivery later.
func New(secret string, out io.Writer, opts ...Option) (*Listener, error) {
	if _, err := sign.ParseSecret(secret); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("listener: no output writer")
	}
	l := &Listener{secret: secret, out: out, now: time.Now, limit: DefaultRemembered}
	for _, o := range opts {
		o(l)
	}
	if l.limit <= 0 {
		l.limit = DefaultRemembered
	}
	l.seen = make(map[string]struct{}, min(l.limit, 1024))
	return l, nil
}

// payload is the part of a delivery body the summary line shows.
type payload struct {
	Type string `json:"type"`
	Data struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"data"`
}

// ServeHTTP handles one delivery: 405 for anything but POST; 413 for a body over
// MaxBody and 400 for one that fails verification, each with a line on out saying
// why; otherwise 200, printing the event the first time its webhook id is seen
// and a "duplicate" line on redeliveries, as a receiver must process each event once.
func (l *Listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST is accepted", http.StatusMethodNotAllowed)
		return
	}
	now := l.now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			l.reject(r, fmt.Sprintf("body larger than %d bytes", MaxBody))
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		l.reject(r, "reading body: "+err.Error())
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	if err := sign.Verify(l.secret, r.Header, body, now, Tolerance); err != nil {
		l.reject(r, err.Error())
		http.Error(w, "webhook verification failed: "+err.Error(), http.StatusBadRequest)
		return
	}
	id := sign.MessageID(r.Header)

	// The check, the insertion and the print happen under one lock, so concurrent
	// redeliveries print once and their lines never interleave.
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.seen[id]; dup {
		fmt.Fprintf(l.out, "duplicate %s ignored\n", printable(id))
		w.WriteHeader(http.StatusOK)
		return
	}
	l.remember(id)
	_, _ = l.out.Write(render(now, id, body))
	w.WriteHeader(http.StatusOK)
}

// remember adds id to the set, evicting the oldest id once the set is full.
// The caller holds l.mu.
func (l *Listener) remember(id string) {
	if len(l.ring) < l.limit {
		l.ring = append(l.ring, id)
	} else {
		delete(l.seen, l.ring[l.next])
		l.ring[l.next] = id
		l.next = (l.next + 1) % l.limit
	}
	l.seen[id] = struct{}{}
}

// reject prints why a delivery was refused, on one line.
func (l *Listener) reject(r *http.Request, reason string) {
	id := sign.MessageID(r.Header)
	if id == "" {
		id = "-"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "rejected %s from %s: %s\n", printable(id), printable(r.RemoteAddr), printable(reason))
}

// render formats an accepted event: a summary line, then the body as indented JSON.
func render(at time.Time, id string, body []byte) []byte {
	var p payload
	typ := "(unreadable body)"
	if err := json.Unmarshal(body, &p); err == nil {
		typ = p.Type
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s  %s  %s  transaction=%s status=%s\n", at.Format(time.RFC3339),
		orDash(typ), printable(id), orDash(p.Data.ID), orDash(p.Data.Status))
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "  ", "  "); err != nil {
		pretty.Reset()
		for i, line := range strings.Split(string(body), "\n") {
			if i > 0 {
				pretty.WriteString("\n  ")
			}
			pretty.WriteString(printable(line))
		}
	}
	b.WriteString("  ")
	b.Write(pretty.Bytes())
	b.WriteByte('\n')
	return b.Bytes()
}

// orDash shows an absent field as "-" so the summary's columns stay readable.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return printable(s)
}

// printable keeps values that reach the terminal on one line and from moving the
// cursor or changing its state, since unverified requests can put anything in them.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
}

// Run listens on addr (such as ":9000", or "127.0.0.1:0" for a free port), calls
// ready with the address actually bound so the command can tell the partner where
// to point their endpoint, and serves l until ctx is done; it then stops accepting
// and waits up to ShutdownTimeout for requests in flight. It returns nil after a
// shutdown asked for by ctx, else the error that stopped the server.
func Run(ctx context.Context, addr string, l *Listener, ready func(addr string)) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           l,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// A sender's idle pooled connection that never carried a request keeps
		// Shutdown waiting; past the grace period, close whatever is left.
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
