package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/safeurl"
	"partnerd/internal/tracing"
	"partnerd/internal/webhook/sign"
)

// Timeout is how long a receiver has to answer.
const Timeout = 15 * time.Second

// maxRetryAfter caps a receiver's Retry-After.
const maxRetryAfter = 24 * time.Hour

// AttemptObserver hears of every delivery attempt (for metrics): the receiver's
// status (0 when none), the transport error, how long it took, and for a delivered
// event the time since it was created.
type AttemptObserver interface {
	Attempted(status int, err error, took time.Duration, deliveredAfter *time.Duration)
}

// Deliverer sends events.
type Deliverer struct {
	observer AttemptObserver
	store    Store
	queue    Queue
	policy   safeurl.Policy
	client   *http.Client
	schedule []time.Duration
	now      func() time.Time
	log      *slog.Logger
}

// NewDeliverer returns a Deliverer retrying on schedule (DefaultSchedule when
// empty); observer (nil for none) hears of each attempt.
func NewDeliverer(store Store, policy safeurl.Policy, schedule []time.Duration, now func() time.Time, log *slog.Logger, observer AttemptObserver) *Deliverer {
	if len(schedule) == 0 {
		schedule = DefaultSchedule
	}
	client := policy.Client(Timeout)
	if t, ok := client.Transport.(*http.Transport); ok {
		// Many workers post to one partner's receiver at once: keep their
		// connections alive between deliveries (the default keeps two per host, so
		// most deliveries dialled, and closed, a connection of their own).
		t.MaxIdleConns = maxIdleConns
		t.MaxIdleConnsPerHost = maxIdleConnsPerHost
	}
	return &Deliverer{store: store, policy: policy, client: client, schedule: schedule, now: now, log: log, observer: observer}
}

// Recovers has a success send the partner's backlog at once: when an attempt
// gets a 2xx, the partner's other events waiting for a retry are due now,
// queued on q oldest first (see recover). Call it once, before the first
// delivery; without it events wait for their back-off.
func (d *Deliverer) Recovers(q Queue) { d.queue = q }

// Trace makes each delivery attempt an outbound client span ("webhook POST", a
// child of the delivery job's span) and sends its W3C traceparent to the
// receiver, so a partner who traces finds the delivery in the trace of the
// request that caused the event. Call it once, before the first delivery, and
// only while traces are exported.
func (d *Deliverer) Trace(tp trace.TracerProvider) {
	d.client.Transport = otelhttp.NewTransport(d.client.Transport,
		otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(tracing.Propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "webhook " + r.Method }))
}

// The delivery client's pool of idle connections: per receiver host about the
// number of workers of one instance, and in all a few such hosts.
const (
	maxIdleConnsPerHost = 64
	maxIdleConns        = 256
)

// Deliver makes one delivery attempt of event id. It returns again with the wait
// before the next attempt when the event must be tried again (a retry, or a requeue
// that arrived during this attempt); otherwise the event is delivered, failed, or
// waiting for an enabled endpoint. An error is a fault of ours (database), retried
// by the job. It costs two statements besides the POST: TakeDelivery before and
// SaveEventState after; a success costs a third, which brings the partner's
// oldest event waiting for a retry forward (recover).
func (d *Deliverer) Deliver(ctx context.Context, id uuid.UUID) (bool, time.Duration, error) {
	ev, ep, requeued, err := d.store.TakeDelivery(ctx, id)
	if apperr.CodeOf(err) == apperr.NotFound {
		return false, 0, nil // purged
	}
	if err != nil {
		return false, 0, err
	}
	if requeued {
		// A replay or an endpoint enabled: a fresh retry cycle.
		ev.PublishStatus, ev.CycleAttempts = Pending, 0
	}
	if ev.PublishStatus != Pending {
		return false, 0, nil
	}
	out, err := d.attempt(ctx, ev, ep)
	if err != nil {
		return false, 0, err
	}
	if out.requeued {
		// Requeued while this attempt ran (the mark stays set): go again now, in
		// this same job.
		return true, 0, nil
	}
	return out.retry, out.wait, nil
}

// outcome is what an attempt leaves to do: a retry after wait, or, when the
// event was requeued meanwhile, another attempt at once.
type outcome struct {
	retry    bool
	wait     time.Duration
	requeued bool
}

// attempt sends ev to ep once (or parks it when no endpoint is enabled) and
// records the outcome.
func (d *Deliverer) attempt(ctx context.Context, ev *Event, ep *Endpoint) (outcome, error) {
	if ep == nil || !ep.Enabled {
		// Waits as pending; enabling an endpoint queues it again.
		ev.NextAttemptAt = nil
		again, err := d.store.SaveEventState(ctx, ev, nil, d.now())
		return outcome{requeued: again}, err
	}

	start := d.now()
	status, retryAfter, body, sendErr := d.send(ctx, ep, ev, start)
	a := &Attempt{AttemptedAt: start, DurationMS: int(d.now().Sub(start).Milliseconds())}
	if status > 0 {
		a.StatusCode = &status
		excerpt := Excerpt(body)
		a.ResponseExcerpt = &excerpt
	}
	ev.Attempts++
	ev.CycleAttempts++
	ev.LastAttemptAt = &start
	ev.NextAttemptAt = nil
	var wait time.Duration
	retry := false
	switch {
	case sendErr == nil && status >= 200 && status < 300:
		ev.PublishStatus = Delivered
	case status == http.StatusGone:
		msg := "410 Gone: endpoint disabled"
		a.Error = &msg
		if err := d.store.DisableEndpoint(ctx, ep.PartnerID, d.now()); err != nil {
			return outcome{}, err
		}
	default:
		msg := fmt.Sprintf("HTTP %d", status)
		if sendErr != nil {
			msg = sendErr.Error()
		}
		a.Error = &msg
		if ev.CycleAttempts > len(d.schedule) {
			ev.PublishStatus = Failed
			break
		}
		wait, retry = jitter(d.schedule[ev.CycleAttempts-1]), true
		if retryAfter > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
			wait = min(retryAfter, maxRetryAfter)
		}
		next := start.Add(wait)
		ev.NextAttemptAt = &next
	}
	again, err := d.store.SaveEventState(ctx, ev, a, d.now())
	if err != nil {
		return outcome{}, err
	}
	if ev.PublishStatus == Delivered && !again {
		d.recover(ctx, ev.PartnerID)
	}
	if d.observer != nil {
		var lag *time.Duration
		if ev.PublishStatus == Delivered {
			l := d.now().Sub(ev.CreatedAt)
			lag = &l
		}
		d.observer.Attempted(status, sendErr, time.Duration(a.DurationMS)*time.Millisecond, lag)
	}
	d.log.InfoContext(ctx, "webhook attempt", "event_id", ev.ID.String(), "type", ev.Type, "partner_id", ev.PartnerID.String(),
		"status_code", status, "duration_ms", a.DurationMS, "publish_status", ev.PublishStatus, "retry_in_ms", wait.Milliseconds())
	return outcome{retry: retry, wait: wait, requeued: again}, nil
}

// recover sends the partner's backlog on, right after a success was recorded:
// the endpoint answers again, so the events waiting for a retry need not wait
// for their back-off (up to hours). The oldest of them is due now (marked
// requeued and queued); its success brings the next one, and so on, so the
// backlog arrives oldest first, one event after another, at the pace the
// receiver answers (and stops again, back on its back-off, at the first
// failure). A failure here costs no event: one marked but not queued is queued
// by the requeue sweep, one not marked keeps its retry. An event whose attempt
// is running is left alone, so none is sent twice.
func (d *Deliverer) recover(ctx context.Context, partnerID uuid.UUID) {
	if d.queue == nil {
		return
	}
	ids, err := d.store.RequeueWaiting(ctx, partnerID, d.now(), recoverStep)
	if err == nil && len(ids) > 0 {
		err = d.queue.RedeliverMany(ctx, ids)
	}
	if err != nil {
		d.log.WarnContext(ctx, "webhook recovery", "partner_id", partnerID.String(), "error", err.Error())
	}
}

// recoverStep is how many waiting events a success makes due: one, so a
// recovered endpoint gets its backlog in order.
const recoverStep = 1

// send POSTs the event's stored payload, signed with every active secret. It
// returns the response status (0 when none arrived), any Retry-After and the
// first ExcerptBytes of the response body.
func (d *Deliverer) send(ctx context.Context, ep *Endpoint, ev *Event, at time.Time) (int, time.Duration, []byte, error) {
	// The URL is checked again at delivery (the policy's dialer re-checks every
	// address actually dialed, which defeats DNS rebinding).
	if err := d.policy.Check(ctx, ep.URL); err != nil {
		return 0, 0, nil, fmt.Errorf("endpoint refused: %w", err)
	}
	h, err := sign.Headers(ep.Secrets(at), ev.ID.String(), at, ev.Payload)
	if err != nil {
		return 0, 0, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(ev.Payload))
	if err != nil {
		return 0, 0, nil, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "partnerd-webhooks/1")
	res, err := d.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, 0, nil, fmt.Errorf("no answer within %s: %w", Timeout, err)
		}
		return 0, 0, nil, err
	}
	defer res.Body.Close()
	// The start is kept for the attempt's record (a partner debugging a failing
	// receiver reads what it answered); the rest, up to a limit, is drained so
	// the connection can be reused. A body cut short by the timeout keeps what
	// arrived.
	head, _ := io.ReadAll(io.LimitReader(res.Body, ExcerptBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	var retryAfter time.Duration
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return res.StatusCode, retryAfter, head, nil
}

// jitter spreads retries over ±10 % so failing receivers are not hit in lockstep.
func jitter(d time.Duration) time.Duration {
	span := int64(d) / 5
	if span <= 0 {
		return d
	}
	return d - time.Duration(span/2) + time.Duration(rand.Int64N(span+1))
}
