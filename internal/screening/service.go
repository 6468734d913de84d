package screening

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
)

// DefaultRetry is how long a transaction whose screening is unknown waits before
// its screeners are asked again (SCREENING_RETRY_INTERVAL).
const DefaultRetry = 30 * time.Second

// Store is what the screening service reads outside a unit of work.
type Store interface {
	ListLookup
	Transaction(ctx context.Context, id uuid.UUID) (*lifecycle.Transaction, error)
	Screenings(ctx context.Context, id uuid.UUID) ([]lifecycle.ScreeningRecord, error)
}

// Observer hears of every screening result (metrics) and of screeners that could
// not answer (the log).
type Observer interface {
	Screened(network, verdict string)
}

// Config is what the Service is built with.
type Config struct {
	// Screeners are the configured screeners (SCREENING); empty means off.
	Screeners []Screener
	// FailOpen lets an unknown answer proceed (SCREENING_FAIL_OPEN, staging only).
	FailOpen bool
	// Retry is the wait before an unknown screening is asked again (DefaultRetry).
	Retry    time.Duration
	Now      func() time.Time
	Log      *slog.Logger
	Observer Observer
}

// Service screens deposits' senders: inline, in the unit of work that counts the
// transfer, when every screener answers from the database (lifecycle.Screener);
// otherwise from the screening job, which asks every screener outside any unit of
// work and applies the results through the lifecycle engine. It also checks a
// refund's destination before an operator sends money back.
type Service struct {
	store     Store
	engine    *lifecycle.Engine
	screeners Combined
	listOnly  bool
	failOpen  bool
	retry     time.Duration
	now       func() time.Time
	log       *slog.Logger
	observer  Observer
}

// New returns the screening service; SetEngine completes it (the engine is built
// with the service as its lifecycle.Screener).
func New(st Store, c Config) *Service {
	s := &Service{store: st, screeners: Combined(c.Screeners), failOpen: c.FailOpen, retry: c.Retry, now: c.Now,
		log: c.Log, observer: c.Observer, listOnly: len(c.Screeners) > 0}
	for _, sc := range c.Screeners {
		if sc.Kind() != "list" {
			s.listOnly = false
		}
	}
	if s.retry <= 0 {
		s.retry = DefaultRetry
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// Add adds a screener built after the service (an oracle needs its network's
// chain providers); call it before the service is used.
func (s *Service) Add(sc Screener) {
	s.screeners = append(s.screeners, sc)
	if sc.Kind() != "list" {
		s.listOnly = false
	}
}

// SetEngine hands the service the engine it applies results through.
func (s *Service) SetEngine(e *lifecycle.Engine) { s.engine = e }

// On reports whether any screener is configured.
func (s *Service) On() bool { return len(s.screeners) > 0 }

// Inline screens address in tx when every screener answers from the database (the
// lists): the record and true. Otherwise false: the screening job asks.
func (s *Service) Inline(ctx context.Context, tx lifecycle.Tx, network, address string, now time.Time) (*lifecycle.ScreeningRecord, bool, error) {
	if !s.listOnly {
		return nil, false, nil
	}
	ls, err := tx.Listings(ctx, Key(address))
	if err != nil {
		return nil, false, err
	}
	f := ListFinding(ls)
	r := Result{Verdict: Clear, Findings: []Finding{f}, CheckedAt: now.UTC()}
	if f.Hit {
		r.Verdict = Hit
	}
	s.observe(ctx, network, address, r)
	rec, err := record(network, address, r)
	return rec, true, err
}

// ScreenTransaction is the screening job: it screens the senders of transaction
// id that have no answer yet (every sender when rescreen: a list was imported),
// applies the results, and returns how long to wait before asking again while an
// answer is unknown (zero when done).
func (s *Service) ScreenTransaction(ctx context.Context, id uuid.UUID, rescreen bool) (time.Duration, error) {
	t, err := s.store.Transaction(ctx, id)
	if err != nil {
		if apperr.CodeOf(err) == apperr.NotFound {
			return 0, nil
		}
		return 0, err
	}
	if t.Screening == lifecycle.ScreeningBlocked || !s.On() {
		return 0, nil
	}
	if !rescreen && !stillOpen(t) {
		return 0, nil
	}
	records, err := s.store.Screenings(ctx, id)
	if err != nil {
		return 0, err
	}
	answered := map[string]bool{}
	for _, r := range records {
		if r.Verdict != lifecycle.VerdictUnknown {
			answered[r.Address] = true
		}
	}
	// The screeners are bounded by the job's own timeout: what is not answered by
	// then is unknown and asked again.
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var results []lifecycle.ScreeningRecord
	for _, a := range lifecycle.Senders(t) {
		if answered[a] && !rescreen {
			continue
		}
		r := s.screeners.Screen(sctx, t.Network, a, s.now())
		s.observe(ctx, t.Network, a, r)
		rec, err := record(t.Network, a, r)
		if err != nil {
			return 0, err
		}
		results = append(results, *rec)
	}
	after, err := s.engine.Run(ctx, func(ctx context.Context, tx lifecycle.Tx) (*lifecycle.Transaction, error) {
		return s.engine.ApplyScreening(ctx, tx, id, results)
	})
	if err != nil {
		return 0, err
	}
	switch after.Screening {
	case lifecycle.ScreeningUnknown, lifecycle.ScreeningPending:
		s.log.WarnContext(ctx, "screening could not answer: the transaction's funds wait", "transaction_id", id.String(),
			"network", t.Network, "screening", string(after.Screening), "retry_in", s.retry.String())
		return s.retry, nil
	case lifecycle.ScreeningHeld:
		s.log.WarnContext(ctx, "deposit held for review", "transaction_id", id.String(), "network", t.Network)
	}
	return 0, nil
}

// stillOpen reports whether t's funds have not moved on (the screening of a
// later transfer, or a re-screen, still matters).
func stillOpen(t *lifecycle.Transaction) bool {
	switch t.Status {
	case lifecycle.AwaitingDeposit, lifecycle.DepositConfirming, lifecycle.Expired:
		return true
	}
	return false
}

// ScreenDestination screens the destination a partner named for a refund, outside
// any unit of work (remote screeners answer over the network): the record to keep
// with the transaction (a hit holds it for review), or nil when screening is off.
// Errors: ServiceUnavailable when a screener could not answer (unless fail-open
// lets an unknown answer proceed): nothing is recorded until it can.
func (s *Service) ScreenDestination(ctx context.Context, network, address string) (*lifecycle.ScreeningRecord, error) {
	if !s.On() {
		return nil, nil
	}
	r := s.screeners.Screen(ctx, network, address, s.now())
	s.observe(ctx, network, address, r)
	if r.Verdict == Unknown && !s.failOpen {
		return nil, apperr.New(apperr.ServiceUnavailable,
			"The refund's destination could not be screened now; try again shortly.")
	}
	return record(network, address, r)
}

// CheckRefund screens the destinations of a refund on chain before an operator
// records it: funds are never sent to an address a screener names. Errors:
// InvalidStateTransition (a destination is named), ServiceUnavailable (a
// screener could not answer: nothing is sent until it does).
func (s *Service) CheckRefund(ctx context.Context, network string, addresses []string) error {
	if !s.On() {
		return nil
	}
	for _, a := range addresses {
		if a == "" {
			continue
		}
		r := s.screeners.Screen(ctx, network, a, s.now())
		s.observe(ctx, network, a, r)
		switch r.Verdict {
		case Hit:
			return apperr.New(apperr.InvalidStateTransition,
				fmt.Sprintf("The refund's destination %s is named by a sanctions screener; funds are never sent to it. Review the transaction instead.", a))
		case Unknown:
			if !s.failOpen {
				return apperr.New(apperr.ServiceUnavailable,
					fmt.Sprintf("The refund's destination %s could not be screened now; try again when the screeners answer.", a))
			}
		}
	}
	return nil
}

func (s *Service) observe(ctx context.Context, network, address string, r Result) {
	if s.observer != nil {
		s.observer.Screened(network, string(r.Verdict))
	}
	for _, f := range r.Findings {
		if f.Error != "" {
			s.log.WarnContext(ctx, "screener could not answer", "screener", f.Screener, "network", network, "address", address, "error", f.Error)
		}
	}
}

func record(network, address string, r Result) (*lifecycle.ScreeningRecord, error) {
	findings, err := json.Marshal(r.Findings)
	if err != nil {
		return nil, err
	}
	return &lifecycle.ScreeningRecord{Network: network, Address: address, Verdict: lifecycle.ScreeningVerdict(r.Verdict),
		Findings: findings, CheckedAt: r.CheckedAt}, nil
}
