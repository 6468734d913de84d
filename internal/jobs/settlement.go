package jobs

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// Stepper performs the automatic settlement steps (settle, pay out) of the
// simulated adapters in SETTLEMENT_MODE=auto; the transactions lifecycle implements
// it. RunStep must be idempotent: a step already done, or no longer possible, is nil.
type Stepper interface {
	RunStep(ctx context.Context, transactionID uuid.UUID, step string) error
}

// SettlementStepArgs is the job that performs one automatic step of one
// transaction at its time. It is inserted in the database transaction of the change
// that made it due (the fill, the settlement), so a restart loses nothing.
type SettlementStepArgs struct {
	TransactionID uuid.UUID `json:"transaction_id"`
	Step          string    `json:"step"`
}

// Kind is the job's kind in River's tables.
func (SettlementStepArgs) Kind() string { return "settlement_step" }

// InsertOpts makes the job unique by its arguments: one job per step and transaction.
func (SettlementStepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type stepWorker struct {
	river.WorkerDefaults[SettlementStepArgs]
	s Stepper
}

func (w *stepWorker) Timeout(*river.Job[SettlementStepArgs]) time.Duration {
	return Timeouts[SettlementStepArgs{}.Kind()]
}

func (w *stepWorker) Work(ctx context.Context, job *river.Job[SettlementStepArgs]) error {
	return w.s.RunStep(ctx, job.Args.TransactionID, job.Args.Step)
}

// addStepWorker registers the settlement step worker when s is set.
func addStepWorker(workers *river.Workers, s Stepper) error {
	if s == nil {
		return nil
	}
	return river.AddWorkerSafely(workers, &stepWorker{s: s})
}
