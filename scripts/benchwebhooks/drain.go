package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// runDrain is the throughput mode: with the endpoint registered but disabled it
// creates one transaction through the API (for a transaction id to attach events
// to), inserts o.drain pending transaction.created events straight into the
// database (each one's data.id is its own id, so the receiver counts it like a
// created transaction), then enables the endpoint, which queues every pending event
// at once, and waits until all have arrived. Delivery then runs as fast as the
// servers can go: the figure is deliveries per second sustained.
func runDrain(client *http.Client, rcv *receiver, url string, o options) error {
	if o.db == "" {
		return errors.New("-drain needs -db")
	}
	secret, err := register(client, o.apis[0], o.key, url, false)
	if err != nil {
		return err
	}
	rcv.setSecret(secret)
	ld := &load{failed: map[string]int{}}
	ld.create(client, o, 0, fmt.Sprintf("%x", time.Now().UnixNano()))
	if len(ld.ok) != 1 {
		return fmt.Errorf("create the transaction events attach to: %v", ld.failed)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, o.db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
INSERT INTO events (id, partner_id, transaction_id, type, payload, created_at)
SELECT g.id, t.partner_id, t.id, 'transaction.created',
       json_build_object('id', g.id, 'type', 'transaction.created',
                         'created_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                         'data', json_build_object('id', g.id))::text,
       now()
  FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $2)) g, transactions t
 WHERE t.id = $1
RETURNING id::text`, ld.ok[0].txID, o.drain)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("insert events: %w", err)
	}
	ids = append(ids, ld.ok[0].txID)

	cpu0 := cpuTime()
	start := time.Now()
	enabled := make(chan error, 1)
	go func() {
		_, err := register(client, o.apis[0], o.key, url, true)
		enabled <- err
	}()
	var enableTook time.Duration
	enableDone := false
	deadline := time.Now().Add(o.wait)
	for time.Now().Before(deadline) && rcv.pendingOf(ids) > 0 {
		select {
		case err := <-enabled:
			if err != nil {
				return err
			}
			enableTook, enableDone = time.Since(start), true
		default:
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !enableDone {
		if err := <-enabled; err != nil {
			return err
		}
		enableTook = time.Since(start)
	}

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var at []time.Time
	for _, id := range ids {
		if wid, ok := rcv.byTx[id]; ok {
			at = append(at, rcv.first[wid].at)
		}
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	title := "webhook drain benchmark"
	if o.label != "" {
		title += " (" + o.label + ")"
	}
	fmt.Printf("== %s ==\n", title)
	fmt.Printf("instances                 %d (%v)\n", len(o.apis), o.apis)
	fmt.Printf("events queued             %d pending, released by enabling the endpoint (the PUT took %s)\n", len(ids), enableTook.Round(time.Millisecond))
	fmt.Printf("events delivered          %d of %d\n", len(at), len(ids))
	fmt.Printf("requests at receiver      %d (duplicates %d, concurrent duplicates %d, bad signatures %d, bad bodies %d, max in flight %d)\n",
		rcv.requests, rcv.duplicates, rcv.concurrentDup, rcv.badSignature, rcv.badBody, rcv.maxInFlight)
	thr, steady := 0.0, 0.0
	if len(at) > 0 {
		span := at[len(at)-1].Sub(start)
		thr = float64(len(at)) / span.Seconds()
		fmt.Printf("throughput                %.1f deliveries/s (delivered ÷ enable to last arrival, %.2fs; first arrival after %s)\n",
			thr, span.Seconds(), at[0].Sub(start).Round(time.Millisecond))
		if lo, hi := len(at)/10, len(at)*9/10; hi > lo {
			steady = float64(hi-lo) / at[hi].Sub(at[lo]).Seconds()
			fmt.Printf("steady throughput         %.1f deliveries/s (10th to 90th percentile arrival)\n", steady)
		}
	}
	fmt.Printf("driver+receiver CPU       %.1fs\n", (cpuTime() - cpu0).Seconds())
	fmt.Printf("RESULT sent=%d delivered=%d dup=%d concdup=%d badsig=%d offered=%.1f thr=%.1f p50=%s p90=%s p99=%s max=%s\n",
		len(ids), len(at), rcv.duplicates, rcv.concurrentDup, rcv.badSignature, steady, thr, "-", "-", "-", "-")
	return nil
}
