package jobs

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// TransactionScreener screens a transaction's deposit senders with the screeners
// that cannot answer inside the unit of work that detected them (package
// screening). It returns how long to wait before asking again when a screener
// could not answer (zero: done); the job then snoozes, so a screener that is down
// for a day holds the money for a day, and is asked again all along, without
// exhausting the job's attempts.
type TransactionScreener interface {
	ScreenTransaction(ctx context.Context, transactionID uuid.UUID, rescreen bool) (retryIn time.Duration, err error)
}

// ScreenTransactionArgs is the job that screens one transaction's senders, inserted
// by the unit of work that counted a transfer from a sender nobody screened yet
// (and, with Rescreen, for every waiting transaction when a list is imported).
type ScreenTransactionArgs struct {
	TransactionID uuid.UUID `json:"transaction_id"`
	Rescreen      bool      `json:"rescreen,omitempty"`
}

// Kind is the job's kind in River's tables.
func (ScreenTransactionArgs) Kind() string { return "screen_transaction" }

// InsertOpts makes the job unique among live jobs of the transaction (a finished
// one does not stop a later transfer's screening).
func (ScreenTransactionArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

type screenWorker struct {
	river.WorkerDefaults[ScreenTransactionArgs]
	s TransactionScreener
}

func (w *screenWorker) Timeout(*river.Job[ScreenTransactionArgs]) time.Duration {
	return Timeouts[ScreenTransactionArgs{}.Kind()]
}

func (w *screenWorker) Work(ctx context.Context, job *river.Job[ScreenTransactionArgs]) error {
	retry, err := w.s.ScreenTransaction(ctx, job.Args.TransactionID, job.Args.Rescreen)
	if err != nil {
		return err
	}
	if retry > 0 {
		return river.JobSnooze(retry)
	}
	return nil
}
