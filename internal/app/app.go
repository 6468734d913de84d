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
	"net/http/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"partnerd/openapi"

	"partnerd/internal/address"
	"partnerd/internal/apikeys"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/approvals"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/payouts"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/backoffice/revenue"
	"partnerd/internal/backoffice/settlement"
	"partnerd/internal/config"
	"partnerd/internal/contract/docs"
	"partnerd/internal/deposits"
	"partnerd/internal/httpapi"
	"partnerd/internal/httpkit"
	"partnerd/internal/idempotency"
	"partnerd/internal/jobs"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/kit/safeurl"
	"partnerd/internal/lifecycle"
	"partnerd/internal/metrics"
	"partnerd/internal/partners"
	"partnerd/internal/partnerusers"
	"partnerd/internal/pricing"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/pricing/rates"
	"partnerd/internal/ratelimit"
	"partnerd/internal/screening"
	"partnerd/internal/store"
	"partnerd/internal/tracing"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

// App is a configured service with its database open and migrated.
type App struct {
	cfg      *config.Config
	log      *slog.Logger
	tracing  *tracing.Provider
	store    *store.Store
	partners *partners.Service
	quotes   *quotes.Service
	feed     *rates.HTTPFeed

	transactions *transactions.Service
	lifecycle    *lifecycle.Engine
	// screening screens deposits' senders; nil when SCREENING=off.
	screening *screening.Service
	// decisions are the partner's accept and refund of a short payment.
	decisions   *transactions.Decisions
	idempotency *idempotency.Service
	jobs        *jobs.Runner
	events      *webhook.Log
	metrics     *metrics.Metrics
	watchers    *watchers
	progress    *progressRecorder
	handler     http.Handler
	// inProcessWrap wraps the console's in-process calls (CheckInProcess); nil in service.
	inProcessWrap func(http.Handler) http.Handler
	codec         *cursor.Codec
	limiter       ratelimit.Limiter

	// The operator API (operator.go).
	operators *operators.Service
	approvals *approvals.Service
	// settlement keeps partners' settlement accounts (and the provider's banks).
	settlement   *settlement.Service
	unmatched    *refunds.Service
	operatorKeys *idempotency.Service
	// audit, batches and backoffice serve the back office (the operator API and the console).
	audit      *audit.Log
	batches    *batches.Service
	backoffice *backoffice.Service
	keys       *apikeys.Service
	actions    *actions.Service
	// partnerUsers are the people of partners who sign in to the dashboard.
	partnerUsers *partnerusers.Service

	// linkBase is what the links handed to people start with (config.LinkBase of
	// the listener Serve was given); unset until then.
	linkBase atomic.Pointer[string]
	// inFlight counts the requests being answered, for the shutdown to say what
	// it waits for.
	inFlight atomic.Int64
}

// LinkBase is what the links the service hands to people start with (an
// invitation's): PUBLIC_URL, or else the address it listens on, once Serve has
// bound it (before, LISTEN_ADDR's).
func (a *App) LinkBase() string {
	if b := a.linkBase.Load(); b != nil {
		return *b
	}
	return a.cfg.LinkBase(nil)
}

// Open connects to the database, applies pending migrations and builds the services.
// Traces are exported only when the OTEL_* settings name an OTLP endpoint
// (tracing.Setup); Close flushes what is buffered.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger) (_ *App, err error) {
	tp, err := tracing.Setup(ctx, func(k string) string { return cfg.Tracing[k] })
	if err != nil {
		return nil, err
	}
	if tp.Enabled() {
		log.Info("traces exported over OTLP/HTTP")
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		_ = tp.Shutdown(ctx)
		return nil, err
	}
	if cfg.Secrets != nil {
		st.UseSecrets(cfg.Secrets)
	}
	defer func() { // the one cleanup: any failure below closes the database
		if err != nil {
			_ = st.Close()
			_ = tp.Shutdown(ctx)
		}
	}()
	if _, err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	if tp.Enabled() {
		if err := st.Trace(tp); err != nil {
			return nil, err
		}
	}
	a := &App{cfg: cfg, log: log, tracing: tp, store: st, metrics: metrics.New(), codec: cursor.NewCodec(cfg.CursorSecret)}
	a.partners = partners.NewService(store.For(st, func(tx *store.Tx) partners.Tx { return tx }), partnerEnv(cfg.Env), partners.Defaults{
		FeeRate: cfg.PartnerFeeRate, ShareRate: cfg.PartnerShareRate,
	}, store.Now)
	a.unmatched = refunds.NewService(st, a.codec, store.Now)
	pricer, err := a.openPricing()
	if err != nil {
		return nil, err
	}
	if err := a.openTransactions(ctx, pricer); err != nil {
		return nil, err
	}
	policy := safeurl.Policy{AllowPrivate: cfg.WebhookAllowPrivate, RequireHTTPS: cfg.Env == config.Production}
	if err := a.openJobs(policy); err != nil {
		return nil, err
	}
	e, err := a.openPartnerAPI(policy)
	if err != nil {
		return nil, err
	}
	if err := a.openOperatorAPI(e); err != nil {
		return nil, err
	}
	a.handler = e
	return a, nil
}

// openPricing builds the rate source (static, or the HTTP feed Serve runs), the
// pricer and the quote service.
func (a *App) openPricing() (*pricing.Pricer, error) {
	cfg := a.cfg
	var source rates.Source
	switch cfg.RateSource {
	case "http":
		feed, err := rates.NewHTTPFeed(rates.HTTPFeedConfig{
			URL: cfg.RateFeedURL, Fields: cfg.RateFeedKeys, Interval: cfg.RateInterval, Logger: a.log,
		})
		if err != nil {
			return nil, fmt.Errorf("rate feed: %w", err)
		}
		a.feed, source = feed, feed
	default:
		source = rates.NewStatic(cfg.StaticRates, time.Now)
	}
	source = rates.WithMaxAge(source, cfg.RateMaxAge, time.Now)
	pricer := pricing.NewPricer(source, cfg.Pairs, cfg.Spread)
	a.quotes = quotes.NewService(pricer, store.For(a.store, func(tx *store.Tx) quotes.Tx { return tx }), store.Now)
	return pricer, nil
}

// openTransactions builds the deposit address book, the transaction service and
// the lifecycle with its settlement adapters.
func (a *App) openTransactions(ctx context.Context, pricer *pricing.Pricer) error {
	cfg, st := a.cfg, a.store
	networks := make([]string, 0, len(cfg.XPubs))
	for n := range cfg.XPubs {
		networks = append(networks, n)
	}
	if err := st.EnsureAddressSequences(ctx, networks); err != nil {
		return err
	}
	book, err := address.NewBook(cfg.XPubs)
	if err != nil {
		return err
	}
	for _, n := range cfg.DemoXPubs {
		a.log.Warn("DEMO DEPOSIT KEYS: deposit addresses of this network come from a public test mnemonic; anyone can spend from them. Set XPUB_"+strings.ToUpper(n)+" before taking real deposits.", "network", n)
	}
	if cfg.Secrets != nil && cfg.Secrets.IsDevelopment() {
		a.log.Warn("SECRETS_KEYS is unset; TOTP and webhook signing secrets are sealed with the built-in development key (public)")
	}
	if cfg.DemoCursorSecret {
		a.log.Warn("CURSOR_SECRET is unset; using the built-in staging secret for page cursors")
	}
	obs := observer{m: a.metrics, log: a.log}
	a.transactions = transactions.NewService(store.For(st, func(tx *store.Tx) transactions.Tx { return tx }), pricer, book, cfg.DepositWindow, store.Now, obs)
	payments := cfg.Payments
	lc := lifecycle.Config{
		Required: cfg.Confirmations, Now: store.Now, Settlement: settlementOf(cfg, st),
		Payments: &payments, Tasks: a.unmatched, Observer: obs,
	}
	if err := a.openScreening(ctx); err != nil {
		return err
	}
	if a.screening != nil {
		lc.Screener, lc.ScreeningFailOpen = a.screening, cfg.Screening.FailOpen
	}
	a.lifecycle = lifecycle.NewEngine(store.For(st, func(tx *store.Tx) lifecycle.Tx { return tx }), lc)
	if a.screening != nil {
		a.screening.SetEngine(a.lifecycle)
	}
	a.progress = newProgressRecorder(st, a.metrics.Chain(), a.log, store.Now)
	if a.watchers, err = openWatchers(ctx, cfg, st, a.lifecycle, a.unmatched, a.metrics, a.progress, a.tracedBy(), a.log); err != nil {
		return err
	}
	if err := a.addOracles(); err != nil {
		return err
	}
	// The partner's decisions on short payments: the pricer prices an accept
	// afresh, and the screening service (when on) screens a refund's destination.
	var screen transactions.DestinationScreen
	if a.screening != nil {
		screen = a.screening
	}
	a.decisions = transactions.NewDecisions(a.lifecycle, store.For(st, func(tx *store.Tx) transactions.DecisionTx { return tx }).WithTx,
		store.For(st, func(tx *store.Tx) transactions.Tx { return tx }), pricer, screen, store.Now)
	return nil
}

// openJobs builds the webhook deliverer, the job runner (expiry sweep, deliveries,
// settlement steps) and the webhook event log.
func (a *App) openJobs(policy safeurl.Policy) error {
	cfg, st := a.cfg, a.store
	deliverer := webhook.NewDeliverer(st, policy, cfg.WebhookSchedule, store.Now, a.log, observer{m: a.metrics, log: a.log})
	if tp := a.tracedBy(); tp != nil {
		deliverer.Trace(tp)
	}
	var err error
	a.jobs, err = jobs.NewRunner(st.JobDriver(), expirer{a.lifecycle}, jobs.Options{
		Logger: a.log, SweepInterval: cfg.ExpirySweep, FetchPollInterval: cfg.JobPollInterval,
		RescueAfter: cfg.JobRescueAfter, Deliverer: deliverer, Requeues: st,
		Stepper: a.lifecycle, Screener: a.jobScreener(), Tracing: a.tracedBy(),
	})
	if err != nil {
		return fmt.Errorf("job runner: %w", err)
	}
	deliverer.Recovers(a.jobs)
	a.events = webhook.NewLog(st, a.jobs, a.codec, store.Now)
	a.metrics.QueueDepth(st.QueueDepth)
	a.metrics.ObserveDatabase(st.SQL())
	return nil
}

// tracedBy is the tracer provider of the work that is traced only while traces
// are exported (jobs, statements, deliveries, chain calls), nil otherwise.
func (a *App) tracedBy() trace.TracerProvider {
	if !a.tracing.Enabled() {
		return nil
	}
	return a.tracing
}

// openPartnerAPI builds the HTTP handler: the partner API, health, metrics and
// the reference page.
func (a *App) openPartnerAPI(policy safeurl.Policy) (*echo.Echo, error) {
	cfg, st := a.cfg, a.store
	limiter, err := newLimiter(cfg, a.log)
	if err != nil {
		return nil, err
	}
	a.limiter = limiter
	a.idempotency = idempotency.NewService(st.PartnerKeys(), store.Now)
	handler, err := httpapi.New(httpapi.Deps{
		Partners:     a.partners,
		Quotes:       a.quotes,
		Transactions: a.transactions,
		Lister:       transactions.NewLister(store.For(st, func(tx *store.Tx) transactions.Tx { return tx }), a.codec),
		Decisions:    a.decisions,
		Lifecycle:    a.lifecycle,
		Ledger:       revenue.NewLedger(st, a.codec, store.Now),
		Payouts:      payouts.New(st, a.codec),
		History:      st,
		Endpoints:    webhook.NewEndpoints(store.For(st, func(tx *store.Tx) webhook.Tx { return tx }), policy, a.jobs, store.Now),
		Events:       a.events,
		Production:   cfg.Env == config.Production,
		Proxies:      cfg.TrustedProxies,
		ProxyHeader:  cfg.TrustedProxyHeader,
		Metrics:      a.metrics,
		Limiter:      limiter,
		Limits:       map[ratelimit.Class]ratelimit.Limit{ratelimit.Reads: cfg.RateLimitReads, ratelimit.Writes: cfg.RateLimitWrites},
		Idempotency:  a.idempotency,
		Rescans:      a.rescans(),
		Logger:       a.log,
		Tracing:      a.tracing,
		Unavailable:  store.Unavailable,
		Degraded: func(ctx context.Context) []string {
			var out []string
			if a.watchers != nil {
				out = a.watchers.degraded()
			}
			return append(out, a.screeningDegraded(ctx)...)
		},
		Ready: func(r *http.Request) error {
			if err := st.Ping(r.Context()); err != nil {
				return err
			}
			pending, err := st.PendingMigrations(r.Context())
			if err != nil {
				return err
			}
			if pending {
				return errors.New("migrations pending")
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	docs.New(openapi.PartnerYAML).Register(handler)
	docs.RegisterChangelog(handler, openapi.ChangelogMD)
	docs.RegisterOps(handler)
	docs.RegisterGuides(handler)
	// The root leads a newcomer (or a browser) to the reference, which links the rest.
	handler.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, docs.PagePath) })
	return handler, nil
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

// Close releases the database and flushes the spans still buffered (for at most
// 5 s: a collector out of reach must not hold up a shutdown).
func (a *App) Close() error {
	a.watchers.close()
	flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.tracing.Shutdown(flush); err != nil {
		a.log.Warn("flushing traces failed", "error", err.Error())
	}
	return a.store.Close()
}

// Handler returns the HTTP handler.
func (a *App) Handler() http.Handler { return a.handler }

// Partners returns the partner service (for the partners command and tests).
func (a *App) Partners() *partners.Service { return a.partners }

// EnsureDemoPartner creates the demo partner in staging when the database has no
// partner and returns it and its key (nil and "" when none was created).
func (a *App) EnsureDemoPartner(ctx context.Context) (*partners.Partner, string, error) {
	if a.cfg.Env != config.Staging {
		return nil, "", nil
	}
	return a.partners.EnsureDemo(ctx)
}

// Serve accepts connections on ln until ctx is done, then stops accepting, lets
// requests in flight finish (up to 20 s) and returns.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	base := a.cfg.LinkBase(ln.Addr())
	a.linkBase.Store(&base)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a.inFlight.Add(1)
			defer a.inFlight.Add(-1)
			a.handler.ServeHTTP(w, r)
		}),
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
	a.warnLoneAdmins(ctx)
	go a.partners.WatchKeys(feedCtx, partners.KeysWatchInterval)
	if a.cfg.PprofAddr != "" {
		go a.servePprof(feedCtx)
	}
	watchersDone := make(chan struct{})
	go func() { defer close(watchersDone); a.runWatchers(feedCtx) }()
	defer func() { stopFeed(); <-watchersDone }()
	if err := a.jobs.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start jobs: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(httpkit.Listener(ln)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Say what the stop waits for: a request still running (a slow client, a
	// long export) holds it up to ShutdownTimeout.
	a.log.Info("shutting down: no new requests; waiting for the requests in flight, then the running jobs",
		"requests_in_flight", a.inFlight.Load(), "at_most", ShutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
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

// ShutdownTimeout bounds a graceful stop: how long Serve waits, once its context
// ends, for the requests in flight and then the running jobs.
const ShutdownTimeout = 20 * time.Second

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
			"operator idempotency keys": a.operatorKeys.Purge,
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

// expirer adapts the lifecycle to the job runner.
type expirer struct{ l *lifecycle.Engine }

// Expire expires id at its deadline. A transaction that moved on, or is gone, is
// done with; one whose deadline is ahead returns an error so River retries it.
func (e expirer) Expire(ctx context.Context, id uuid.UUID) error {
	_, err := e.l.Run(ctx, func(ctx context.Context, tx lifecycle.Tx) (*lifecycle.Transaction, error) {
		return e.l.Expire(ctx, tx, id, false)
	})
	switch {
	case err == nil, errors.Is(err, lifecycle.ErrNoLongerAwaiting),
		apperr.CodeOf(err) == apperr.InvalidStateTransition, apperr.CodeOf(err) == apperr.NotFound:
		return nil
	default:
		return err
	}
}

func (e expirer) ExpireDue(ctx context.Context, now time.Time, limit int) (int, error) {
	return e.l.ExpireDue(ctx, now, limit)
}

// observer turns committed transitions and delivery attempts into log lines and metrics.
type observer struct {
	m   *metrics.Metrics
	log *slog.Logger
}

func (o observer) Transitioned(t *lifecycle.Transaction, tr lifecycle.Transition) {
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

// servePprof serves the runtime profiles (net/http/pprof) on PPROF_ADDR until ctx ends.
func (a *App) servePprof(ctx context.Context) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: a.cfg.PprofAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	a.log.Info("profiles served", "addr", a.cfg.PprofAddr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.log.Warn("pprof server", "error", err.Error())
	}
}

// LockServing is taken by `serve` before Open: on SQLite a second serving
// process on one file is refused (store.LockServing); the commands that only
// read or add a row do not take it.
func LockServing(databaseURL string) (release func(), err error) {
	return store.LockServing(databaseURL)
}

// rescans is the rescans of the chains watched here (nil before the watchers open).
func (a *App) rescans() *deposits.Rescanner {
	if a.watchers == nil {
		return nil
	}
	return a.watchers.rescans
}
