package quietlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/jobs/quietlog"
)

// clock is a test's clock, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func setup(quiet time.Duration) (*quietlog.Handler, *bytes.Buffer, *clock) {
	var buf bytes.Buffer
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h := quietlog.New(slog.NewJSONHandler(&buf, nil), quietlog.Options{
		Down: "job queue cannot reach the database", Up: "job queue reaches the database again",
		Quiet: quiet, Now: c.now,
	})
	return h, &buf, c
}

func lines(buf *bytes.Buffer) []map[string]any {
	defer buf.Reset()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			panic(err)
		}
		out = append(out, m)
	}
	return out
}

// A thousand identical errors are one line (the outage's, with the error); a
// different message is a line of its own; lines below WARN pass through; the
// recovery is one line with the count of what was left out and for how long.
func TestCollapsesRepeatsUntilRecovered(t *testing.T) {
	t.Parallel()
	h, buf, c := setup(0)
	river := slog.New(h).With("component", "river")
	ours := slog.New(h).With("component", "jobs")
	ctx := context.Background()
	err := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

	for range 1000 {
		river.Error("producer: Error fetching jobs", "err", err.Error())
		c.add(50 * time.Millisecond)
	}
	got := lines(buf)
	require.Len(t, got, 1)
	require.Equal(t, "job queue cannot reach the database", got[0]["msg"])
	require.Equal(t, "ERROR", got[0]["level"])
	require.Equal(t, "producer: Error fetching jobs", got[0]["cause"])
	require.Equal(t, err.Error(), got[0]["err"])
	require.Equal(t, "river", got[0]["component"])

	// Another message, or the same message of another component: a line each, once.
	for range 10 {
		river.Error("elector: Error attempting to elect", "err", err.Error())
		ours.Error("producer: Error fetching jobs", "err", err.Error())
	}
	got = lines(buf)
	require.Len(t, got, 2)
	require.Equal(t, "elector: Error attempting to elect", got[0]["msg"])
	require.Equal(t, "producer: Error fetching jobs", got[1]["msg"])
	require.Equal(t, "jobs", got[1]["component"])

	// Lines below WARN are not held back and do not end the outage.
	river.Info("producer: Producer job counts")
	got = lines(buf)
	require.Len(t, got, 1)
	require.Equal(t, "producer: Producer job counts", got[0]["msg"])
	river.Error("producer: Error fetching jobs", "err", err.Error())
	require.Empty(t, lines(buf))

	h.Recovered(ctx)
	got = lines(buf)
	require.Len(t, got, 1)
	require.Equal(t, "job queue reaches the database again", got[0]["msg"])
	require.Equal(t, "INFO", got[0]["level"])
	require.EqualValues(t, 999+9+9+1, got[0]["suppressed"])
	require.Equal(t, "50s", got[0]["down_for"])
	require.Equal(t, 1018, h.Suppressed())

	// Recovered again says nothing; the next error opens a new outage.
	h.Recovered(ctx)
	require.Empty(t, lines(buf))
	river.Warn("producer: Error fetching jobs", "err", err.Error())
	got = lines(buf)
	require.Len(t, got, 1)
	require.Equal(t, "job queue cannot reach the database", got[0]["msg"])
	require.Equal(t, "WARN", got[0]["level"])
}

// With Quiet set, an outage no warning repeated for that long is over: the next
// record (or Recovered) is preceded by the recovery line.
func TestQuietIntervalEndsOutage(t *testing.T) {
	t.Parallel()
	h, buf, c := setup(time.Minute)
	log := slog.New(h).With("component", "river")
	for range 5 {
		log.Error("notifier: Error running listener")
		c.add(10 * time.Second)
	}
	require.Len(t, lines(buf), 1)
	c.add(time.Minute)
	log.Debug("not enabled: handled by nobody")
	log.Info("producer: queue idle")
	got := lines(buf)
	require.Len(t, got, 2)
	require.Equal(t, "job queue reaches the database again", got[0]["msg"])
	require.EqualValues(t, 4, got[0]["suppressed"])
	require.Equal(t, "1m50s", got[0]["down_for"])
	require.Equal(t, "producer: queue idle", got[1]["msg"])
}

// Concurrent loggers (River's services each log from their own goroutine) share
// one outage: one opening line whatever the interleaving.
func TestConcurrentRepeats(t *testing.T) {
	t.Parallel()
	h, buf, _ := setup(0)
	log := slog.New(h) // slog's JSON handler serialises its writes
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				log.Error("JobScheduler: Error scheduling jobs")
			}
		})
	}
	wg.Wait()
	require.Len(t, lines(buf), 1)
	require.Equal(t, 799, h.Suppressed())
}
