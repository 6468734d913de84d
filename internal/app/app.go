// Package app wires the service together: configuration → database → domain
// services → HTTP server, and owns start and graceful stop. cmd/partnerd only parses
// the command line and calls in here.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"partnerd/openapi"

	"partnerd/internal/address"
	"partnerd/internal/apperr"
	"partnerd/internal/config"
	"partnerd/internal/cursor"
	"partnerd/internal/docs"
	"partnerd/internal/httpapi"
	"partnerd/internal/idempotency"
	"partnerd/internal/jobs"
	"partnerd/internal/lifecycle"
	"partnerd/internal/metrics"
	"partnerd/internal/partners"
	"partnerd/internal/pricing"
	"partnerd/internal/quotes"
	"partnerd/internal/ratelimit"
	"partnerd/internal/rates"
	"partnerd/internal/safeurl"
	"partnerd/internal/store"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

// App is a configured service with its database open and migrated.
type App struct {
	cfg      *config.Config
	log      *slog.Logger
	store    *store.Store
	partners *partners.Service
	quotes   *quotes.Service
	feed     *rates.HTTPFeed

	transactions *transactions.Service
	lifecycle    *transactions.Lifecycle
	idempotency  *idempotency.Service
	jobs         *jobs.Runner
	events       *webhook.Log
	metrics      *metrics.Metrics
	watchers     *watchers
	handler      http.Handler
}

// Open connects to the database, applies pending migrations and builds the services.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger) (*App, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := jobs.Migrate(ctx, st.SQL(), string(st.Dialect())); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("job queue migrations: %w", err)
	}
	a := &App{cfg: cfg, log: log, store: st}
	a.partners = partners.NewService(st, partnerEnv(cfg.Env), partners.Defaults{
		FeeRate: cfg.PartnerFeeRate, ShareRate: cfg.PartnerShareRate,
	}, store.Now)

	var source rates.Source
	switch cfg.RateSource {
	case "http":
		a.feed, err = rates.NewHTTPFeed(rates.HTTPFeedConfig{
			URL: cfg.RateFeedURL, Fields: cfg.RateFeedKeys, Interval: cfg.RateInterval, Logger: log,
		})
		if err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("rate feed: %w", err)
		}
		source = a.feed
	default:
		source = rates.NewStatic(cfg.StaticRates, time.Now)
	}
	source = rates.WithMaxAge(source, cfg.RateMaxAge, time.Now)
	pricer := pricing.NewPricer(source, cfg.Pairs, cfg.Spread)
	a.quotes = quotes.NewService(pricer, st, store.Now)
	networks := make([]string, 0, len(cfg.XPubs))
	for n := range cfg.XPubs {
		networks = append(networks, n)
	}
	if err := st.EnsureAddressSequences(ctx, networks); err != nil {
		_ = st.Close()
		return nil, err
	}
	book, err := address.NewBook(cfg.XPubs)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	for _, n := range cfg.DemoXPubs {
		log.Warn("DEMO DEPOSIT KEYS: deposit addresses of this network come from a public test mnemonic; anyone can spend from them. Set XPUB_"+strings.ToUpper(n)+" before taking real deposits.", "network", n)
	}
	if cfg.DemoCursorSecret {
		log.Warn("CURSOR_SECRET is unset; using the built-in staging secret for page cursors")
	}
	// Every event row written by a state change gets its delivery job in the same
	// database transaction.
	outbox := outboxStore{st}
	a.transactions = transactions.NewService(outbox, pricer, book, expiryScheduler{st}, cfg.DepositWindow, store.Now)
	a.lifecycle = transactions.NewLifecycle(outbox, cfg.Confirmations, store.Now)

	production := cfg.Env == config.Production
	policy := safeurl.Policy{AllowPrivate: !production, RequireHTTPS: production}
	deliverer := webhook.NewDeliverer(st, policy, cfg.WebhookSchedule, store.Now, log)
	a.jobs, err = jobs.NewRunner(st.SQL(), string(st.Dialect()), expirer{a.lifecycle}, jobs.Options{
		Logger: log, SweepInterval: cfg.ExpirySweep, FetchPollInterval: cfg.JobPollInterval, Deliverer: deliverer, Requeues: st,
	})
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("job runner: %w", err)
	}
	a.events = webhook.NewLog(st, a.jobs, cursor.NewCodec(cfg.CursorSecret), store.Now)

	a.metrics = metrics.New()
	obs := observer{m: a.metrics, log: log}
	a.transactions.Observe(obs)
	a.lifecycle.Observe(obs)
	deliverer.Observe(obs)
	a.metrics.QueueDepth(func() (float64, error) { return st.QueueDepth(context.Background()) })
	if a.watchers, err = openWatchers(ctx, cfg, st, a.lifecycle, a.metrics, log); err != nil {
		_ = st.Close()
		return nil, err
	}

	limiter, err := newLimiter(cfg, log)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	a.idempotency = idempotency.NewService(st, store.Now)

	codec := cursor.NewCodec(cfg.CursorSecret)
	var handler *echo.Echo
	handler, err = httpapi.New(httpapi.Deps{
		Partners:     a.partners,
		Quotes:       a.quotes,
		Transactions: a.transactions,
		Lister:       transactions.NewLister(st, codec),
		Lifecycle:    a.lifecycle,
		Ledger:       transactions.NewLedger(st, codec, store.Now),
		History:      st,
		Endpoints:    webhook.NewEndpoints(st, policy, a.jobs, store.Now),
		Events:       a.events,
		Production:   production,
		Metrics:      a.metrics,
		Limiter:      limiter,
		Limits:       map[ratelimit.Class]ratelimit.Limit{ratelimit.Reads: cfg.RateLimitReads, ratelimit.Writes: cfg.RateLimitWrites},
		Idempotency:  a.idempotency,
		Store:        st,
		Logger:       log,
		Ready: func(r *http.Request) error {
			if err := st.Ping(r.Context()); err != nil {
				return err
			}
			pending, err := st.PendingMigrations(r.Context())
			if err != nil {
				return err
			}
			jobsPending, err := jobs.PendingMigrations(r.Context(), st.SQL(), string(st.Dialect()))
			if err != nil {
				return err
			}
			if pending || jobsPending {
				return errors.New("migrations pending")
			}
			return nil
		},
	})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	docs.New(openapi.PartnerYAML).Register(handler)
	a.handler = handler
	return a, nil
}

// newLimiter returns the rate limiter: shared through Redis when REDIS_URL is set
// (every instance draws on one budget per key), else in this process's memory.
func newLimiter(cfg *config.Config, log *slog.Logger) (ratelimit.Limiter, error) {
	if cfg.RedisURL == "" {
		return ratelimit.NewMemory(), nil
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	// Short timeouts: when Redis is down the limiter fails open, and a request
	// should not wait long to find that out.
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	log.Info("rate limits shared through Redis", "addr", opt.Addr)
	return ratelimit.NewRedis(redis.NewClient(opt)), nil
}

func partnerEnv(env config.Environment) partners.Environment {
	if env == config.Production {
		return partners.Production
	}
	return partners.Sandbox
}

// Close releases the database.
func (a *App) Close() error {
	a.watchers.close()
	return a.store.Close()
}

// Handler returns the HTTP handler.
func (a *App) Handler() http.Handler { return a.handler }

// Partners returns the partner service (for the partners command and tests).
func (a *App) Partners() *partners.Service { return a.partners }

// EnsureDemoPartner creates the demo partner in staging when the database has no
// partner and returns its key ("" when none was created).
func (a *App) EnsureDemoPartner(ctx context.Context) (string, error) {
	if a.cfg.Env != config.Staging {
		return "", nil
	}
	return a.partners.EnsureDemo(ctx)
}

// Serve accepts connections on ln until ctx is done, then stops accepting, lets
// requests in flight finish (up to 20 s) and returns.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	feedCtx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	if a.feed != nil {
		go a.feed.Run(feedCtx)
	}
	go a.purge(feedCtx)
	watchersDone := make(chan struct{})
	go func() { defer close(watchersDone); a.watchers.run(feedCtx) }()
	defer func() { stopFeed(); <-watchersDone }()
	if err := a.jobs.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start jobs: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	shutdownErr := srv.Shutdown(shutdownCtx)
	// Running jobs finish (or are released) after the last request is answered.
	if err := a.jobs.Stop(shutdownCtx); err != nil {
		a.log.Warn("stop jobs", "error", err.Error())
	}
	if shutdownErr != nil {
		return fmt.Errorf("shutdown: %w", shutdownErr)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// purgeInterval is how often expired idempotency keys and webhook events are deleted.
const purgeInterval = 10 * time.Minute

// purge deletes idempotency keys past their retention (24 h) and webhook events
// past theirs (30 days) now and every purgeInterval until ctx is done. Deleting is
// idempotent, so several instances may run it.
func (a *App) purge(ctx context.Context) {
	t := time.NewTicker(purgeInterval)
	defer t.Stop()
	for {
		for what, fn := range map[string]func(context.Context) (int64, error){
			"idempotency keys": a.idempotency.Purge, "webhook events": a.events.Purge,
		} {
			if n, err := fn(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("purge "+what, "error", err.Error())
			} else if n > 0 {
				a.log.Info("purged "+what, "count", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expiryScheduler inserts a transaction's expiry job on the database transaction
// that creates it.
type expiryScheduler struct{ st *store.Store }

func (e expiryScheduler) ScheduleExpiry(ctx context.Context, id uuid.UUID, at time.Time) error {
	tx, ok := e.st.SQLTx(ctx)
	if !ok {
		return errors.New("expiry must be scheduled inside the creating transaction")
	}
	return jobs.InsertExpiryTx(ctx, tx, string(e.st.Dialect()), id, at)
}

// expirer adapts the lifecycle to the job runner.
type expirer struct{ l *transactions.Lifecycle }

// Expire expires id at its deadline. A transaction that moved on, or is gone, is
// done with; one whose deadline is ahead returns an error so River retries it.
func (e expirer) Expire(ctx context.Context, id uuid.UUID) error {
	_, err := e.l.Expire(ctx, id, false)
	switch {
	case err == nil, errors.Is(err, transactions.ErrNotDue),
		apperr.CodeOf(err) == apperr.InvalidStateTransition, apperr.CodeOf(err) == apperr.NotFound:
		return nil
	default:
		return err
	}
}

func (e expirer) ExpireDue(ctx context.Context, now time.Time, limit int) (int, error) {
	return e.l.ExpireDue(ctx, now, limit)
}

// outboxStore is the store as the transaction services see it: writing an event
// also inserts its delivery job, on the same database transaction.
type outboxStore struct{ *store.Store }

func (o outboxStore) InsertEvent(ctx context.Context, e *transactions.Event) error {
	if err := o.Store.InsertEvent(ctx, e); err != nil {
		return err
	}
	tx, ok := o.SQLTx(ctx)
	if !ok {
		return errors.New("events must be written inside a database transaction")
	}
	return jobs.InsertDeliveryTx(ctx, tx, string(o.Dialect()), e.ID)
}

// observer turns committed transitions and delivery attempts into log lines and metrics.
type observer struct {
	m   *metrics.Metrics
	log *slog.Logger
}

func (o observer) Transitioned(t *transactions.Transaction, tr lifecycle.Transition) {
	if tr.Trigger == lifecycle.Create {
		o.m.TransactionCreated(t.Token, t.Network)
	}
	o.m.Transition(string(tr.To))
	o.log.Info("transition", "transaction_id", t.ID.String(), "partner_id", t.PartnerID.String(),
		"from", string(tr.From), "to", string(tr.To), "reason", tr.Reason)
}

func (o observer) Attempted(status int, err error, took time.Duration, deliveredAfter *time.Duration) {
	outcome := metrics.OutcomeSuccess
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		outcome = metrics.OutcomeTimeout
	case err != nil:
		outcome = metrics.OutcomeNetworkError
	case status < 200 || status > 299:
		outcome = metrics.OutcomeHTTPError
	}
	o.m.WebhookAttempt(outcome, took)
	if deliveredAfter != nil {
		o.m.DeliveryLag(*deliveredAfter)
	}
}
