package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// QueueWebhooks is the queue of webhook deliveries, apart from the default queue so
// a backlog of slow receivers never delays expiries.
const QueueWebhooks = "webhooks"

// webhookWorkers is how many deliveries one Runner makes at once.
const webhookWorkers = 50

// DeliveryTimeout is how long one delivery attempt (a job) may run: the receiver's
// 15 seconds (webhook.Timeout) and our bookkeeping. It is the longest of the
// kinds' timeouts (see Timeouts), which RescueAfter must exceed.
const DeliveryTimeout = 25 * time.Second

// DefaultRescueAfter is how long a job may be running before River takes its
// process for dead and retries it (River's RescueStuckJobsAfter, an hour by
// default): the delivery timeout plus a margin, so a delivery interrupted by a
// crash is retried about a minute after it started, and a live attempt, cut off at
// DeliveryTimeout, is never taken for a dead one (at most one delivery of an event
// runs at a time).
const DefaultRescueAfter = DeliveryTimeout + 15*time.Second

// rescuerInterval is how often River's rescuer (run by the leader) looks for stuck
// jobs; River fixes it.
const rescuerInterval = 30 * time.Second

// WebhookFetchCooldown is the least time between two fetches of delivery jobs by
// one Runner (River's default, 100 ms, is the whole latency budget of a delivery).
// The store's inserting client notifies at most as often (store.Open), so a job
// committed just after a notification waits at most about twice this before a
// worker takes it.
const WebhookFetchCooldown = 20 * time.Millisecond

// Deliverer delivers webhook events; the webhook package implements it.
type Deliverer interface {
	// Deliver makes one attempt. With again set the job runs once more after wait
	// (0: at once); otherwise it is done. An error is retried by River with its own
	// backoff.
	Deliver(ctx context.Context, eventID uuid.UUID) (again bool, wait time.Duration, err error)
}

// DeliverEventArgs is the job that delivers one event. Retries of the same event
// reuse the job (snoozed until the next attempt), and it is unique by event while
// it is live, so an event is never delivered by two workers at once.
type DeliverEventArgs struct {
	EventID uuid.UUID `json:"event_id"`
}

// Kind is the job's kind in River's tables.
func (DeliverEventArgs) Kind() string { return "deliver_webhook_event" }

// InsertOpts puts deliveries on their queue and makes them unique per event among
// live jobs (not completed ones, so a replay after delivery inserts a new job).
func (DeliverEventArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueWebhooks,
		MaxAttempts: 25,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled,
		}},
	}
}

type deliverWorker struct {
	river.WorkerDefaults[DeliverEventArgs]
	d Deliverer
}

func (w *deliverWorker) Work(ctx context.Context, job *river.Job[DeliverEventArgs]) error {
	again, wait, err := w.d.Deliver(ctx, job.Args.EventID)
	if err != nil {
		return err
	}
	if again {
		return river.JobSnooze(wait)
	}
	return nil
}

// Timeout is DeliveryTimeout (Timeouts).
func (w *deliverWorker) Timeout(*river.Job[DeliverEventArgs]) time.Duration {
	return Timeouts[DeliverEventArgs{}.Kind()]
}

// Redeliver queues eventID for delivery now: a new job, or, when the event's job is
// waiting for a later retry, that job moved to now. When the event's job is marked
// running, the caller has already marked the event requeued: a job in the middle of
// an attempt sees the mark and runs again; one that just finished (River records
// completions in batches) is waited for in the background and a fresh job queued;
// one whose process died is retried when River rescues it (RescueAfter). Then
// Redeliver returns when the running attempt started and the latest time the
// redelivery starts; both are zero when it is queued now. The periodic requeue
// sweep is the backstop if this process dies meanwhile.
func (r *Runner) Redeliver(ctx context.Context, eventID uuid.UUID) (runningSince, by time.Time, err error) {
	return r.redeliver(ctx, eventID, true)
}

// redeliver is Redeliver; with wait unset it does not wait for an attempt that
// just ended to be recorded (the background paths, which have many to queue).
func (r *Runner) redeliver(ctx context.Context, eventID uuid.UUID, wait bool) (runningSince, by time.Time, err error) {
	res, err := r.client.Insert(ctx, DeliverEventArgs{EventID: eventID}, nil)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("jobs: queue delivery of event %s: %w", eventID, err)
	}
	if wait && res != nil && res.UniqueSkippedAsDuplicate && res.Job != nil && res.Job.State == rivertype.JobStateRunning {
		// An attempt that just ended is still marked running for a moment (River
		// records completions in batches): wait that moment, then queue afresh.
		if job := r.settle(ctx, res.Job); job.State != rivertype.JobStateRunning {
			if res, err = r.client.Insert(ctx, DeliverEventArgs{EventID: eventID}, nil); err != nil {
				return time.Time{}, time.Time{}, fmt.Errorf("jobs: queue delivery of event %s: %w", eventID, err)
			}
		}
	}
	if err := r.existing(ctx, res, eventID); err != nil {
		return time.Time{}, time.Time{}, err
	}
	if res == nil || !res.UniqueSkippedAsDuplicate || res.Job == nil || res.Job.State != rivertype.JobStateRunning {
		return time.Time{}, time.Time{}, nil
	}
	since := res.Job.CreatedAt
	if res.Job.AttemptedAt != nil {
		since = *res.Job.AttemptedAt
	}
	return since.UTC(), r.rescuedBy(since).UTC(), nil
}

// settleWait is how long Redeliver waits for a running job's attempt to be
// recorded as ended before it answers that an attempt is in progress.
const settleWait = time.Second

// settle polls job for up to settleWait while it is running and returns it as last seen.
func (r *Runner) settle(ctx context.Context, job *rivertype.JobRow) *rivertype.JobRow {
	deadline := time.Now().Add(settleWait)
	for job.State == rivertype.JobStateRunning && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return job
		case <-time.After(25 * time.Millisecond):
		}
		next, err := r.client.JobGet(ctx, job.ID)
		if err != nil {
			return job
		}
		job = next
	}
	return job
}

// rescuedBy is the latest time a delivery attempt that started at since is over:
// it ends by its timeout, or, when its process died, the leader's rescuer (which
// looks every rescuerInterval) finds it stuck after RescueAfter.
func (r *Runner) rescuedBy(since time.Time) time.Time {
	return since.Add(r.rescueAfter + rescuerInterval)
}

// redeliverBatch is how many jobs RedeliverMany inserts per statement.
const redeliverBatch = 1000

// RedeliverMany is Redeliver for many events: jobs are inserted a batch at a time,
// and an event whose job already exists is handled as Redeliver does.
func (r *Runner) RedeliverMany(ctx context.Context, eventIDs []uuid.UUID) error {
	for len(eventIDs) > 0 {
		n := min(len(eventIDs), redeliverBatch)
		params := make([]river.InsertManyParams, n)
		for i, id := range eventIDs[:n] {
			params[i] = river.InsertManyParams{Args: DeliverEventArgs{EventID: id}}
		}
		res, err := r.client.InsertMany(ctx, params)
		if err != nil {
			return fmt.Errorf("jobs: queue delivery of %d events: %w", n, err)
		}
		for i, res := range res {
			if err := r.existing(ctx, res, eventIDs[i]); err != nil {
				return err
			}
		}
		eventIDs = eventIDs[n:]
	}
	return nil
}

// existing deals with an insert that found the event's job live already: a job
// waiting for a later retry is moved to now; a running one is waited for.
func (r *Runner) existing(ctx context.Context, res *rivertype.JobInsertResult, eventID uuid.UUID) error {
	if res == nil || !res.UniqueSkippedAsDuplicate || res.Job == nil {
		return nil
	}
	switch res.Job.State {
	case rivertype.JobStateScheduled, rivertype.JobStateRetryable:
		if _, err := r.client.JobRetry(ctx, res.Job.ID); err != nil {
			return fmt.Errorf("jobs: bring delivery of event %s forward: %w", eventID, err)
		}
	case rivertype.JobStateRunning:
		go r.requeueAfter(context.WithoutCancel(ctx), res.Job, eventID)
	}
	return nil
}

// requeueAfter waits (a bounded time: until a job of a dead process is rescued) for
// job to stop running, then queues the event again.
func (r *Runner) requeueAfter(ctx context.Context, job *rivertype.JobRow, eventID uuid.UUID) {
	since := job.CreatedAt
	if job.AttemptedAt != nil {
		since = *job.AttemptedAt
	}
	deadline := r.rescuedBy(since)
	if soon := time.Now().Add(DeliveryTimeout); deadline.Before(soon) {
		deadline = soon
	}
	deadline = deadline.Add(time.Second)
	for time.Now().Before(deadline) {
		job, err := r.client.JobGet(ctx, job.ID)
		if err != nil || job.State != rivertype.JobStateRunning {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, _, err := r.redeliver(ctx, eventID, false); err != nil {
		r.log.WarnContext(ctx, "requeue webhook delivery", "event_id", eventID.String(), "error", err.Error())
	}
}

// SweepRequeuesArgs is the periodic job that queues every event marked requeued
// whose requeue no job took up (the backstop of Redeliver).
type SweepRequeuesArgs struct{}

// Kind is the job's kind in River's tables.
func (SweepRequeuesArgs) Kind() string { return "sweep_webhook_requeues" }

// InsertOpts gives a sweep a single attempt.
func (SweepRequeuesArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 1} }

// Requeues lists events marked requeued for longer than a moment.
type Requeues interface {
	StaleRequeues(ctx context.Context, olderThan time.Time, limit int) ([]uuid.UUID, error)
}

type requeueSweepWorker struct {
	river.WorkerDefaults[SweepRequeuesArgs]
	src    Requeues
	runner *Runner
}

func (w *requeueSweepWorker) Timeout(*river.Job[SweepRequeuesArgs]) time.Duration {
	return Timeouts[SweepRequeuesArgs{}.Kind()]
}

func (w *requeueSweepWorker) Work(ctx context.Context, _ *river.Job[SweepRequeuesArgs]) error {
	ids, err := w.src.StaleRequeues(ctx, time.Now().Add(-time.Minute), SweepLimit)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, _, err := w.runner.redeliver(ctx, id, false); err != nil {
			return err
		}
	}
	return nil
}
