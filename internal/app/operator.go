package app

import (
	"context"
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"

	"partnerd/openapi"

	"partnerd/internal/apikeys"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/approvals"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/backoffice/settlement"
	"partnerd/internal/config"
	"partnerd/internal/contract/docs"
	"partnerd/internal/idempotency"
	"partnerd/internal/lifecycle"
	"partnerd/internal/metrics"
	"partnerd/internal/operatorapi"
	"partnerd/internal/partnerusers"
	"partnerd/internal/payout/paystack"
	"partnerd/internal/ratelimit"
	"partnerd/internal/store"
	"partnerd/internal/web/console"
)

// settlementOf turns the settings into the lifecycle's adapters: in staging's auto
// mode the simulated steps run as jobs SIMULATED_SETTLEMENT_DELAY after the fill.
func settlementOf(cfg *config.Config, st *store.Store) lifecycle.Settlement {
	s := lifecycle.Settlement{
		OperatorLiquidity: cfg.Settlement.Liquidity == config.AdapterOperator,
		OperatorPayout:    cfg.Settlement.Payout == config.AdapterOperator,
	}
	if cfg.Env == config.Staging && cfg.Settlement.Mode == config.SettlementAuto {
		s.AutoDelay = cfg.Settlement.Delay
	}
	return s
}

// An action's unit of work is the store's (actions.Tx gathers the transaction
// interfaces the store keeps a check for, and the fills an answer reads).
var _ actions.Tx = (*store.Tx)(nil)

// openOperatorAPI builds the operator services and mounts the operator API and its
// reference page on e.
func (a *App) openOperatorAPI(e *echo.Echo) error {
	st := a.store
	a.operators = operators.NewService(st, store.Now)
	codec := a.codec
	a.operatorKeys = idempotency.NewService(st.OperatorKeys(), store.Now)
	stages := backoffice.NewStageLister(st, codec)
	stages.ConfirmingTooLong(a.cfg.ConfirmingTooLong, store.Now)
	a.audit = audit.New(st, codec, store.Now)
	a.batches = batches.New(store.For(st, func(tx *store.Tx) batches.Tx { return tx }), a.lifecycle, a.audit, codec, store.Now)
	networks := make([]string, 0, len(a.cfg.Confirmations))
	for n := range a.cfg.Confirmations {
		networks = append(networks, n)
	}
	sort.Strings(networks)
	a.backoffice = backoffice.New(st, stages, a.batches, networks)
	a.metrics.ObserveOperations(operationsOf(a.backoffice))
	a.keys = apikeys.New(st, store.Now)
	a.partnerUsers = partnerusers.New(partnerusers.Deps{Store: store.For(st, func(tx *store.Tx) partnerusers.Tx { return tx }), Partners: a.partners,
		Audit: a.audit, Now: store.Now, Logger: a.log})
	deps := actions.Deps{Begin: store.For(st, func(tx *store.Tx) actions.Tx { return tx }).WithTx, Lifecycle: a.lifecycle, Audit: a.audit, Unmatched: a.unmatched, Batches: a.batches,
		Partners: a.partners, Operators: a.operators, Keys: a.keys, Fills: st, Webhooks: a.events, Logger: a.log}
	if a.screening != nil {
		deps.Screening = a.screening
	}
	a.actions = actions.New(deps)
	a.approvals = approvals.NewService(st, codec, a.cfg.Approvals, a.cfg.ApprovalTTL, store.Now)
	a.metrics.ObserveApprovals(a.approvals.Waiting)
	a.settlement = a.openSettlement()
	if err := operatorapi.Register(e, operatorapi.Deps{
		Approvals:    a.approvals,
		Settlement:   a.settlement,
		Screening:    st,
		Operators:    a.operators,
		Stages:       stages,
		Backoffice:   a.backoffice,
		Audit:        a.audit,
		Batches:      a.batches,
		Partners:     a.partners,
		Keys:         a.keys,
		PartnerUsers: a.partnerUsers,
		Fills:        st,
		Unmatched:    a.unmatched,
		Actions:      a.actions,
		Idempotency:  a.operatorKeys,
		Limiter:      a.limiter,
		Limits:       map[ratelimit.Class]ratelimit.Limit{ratelimit.Reads: a.cfg.RateLimitReads, ratelimit.Writes: a.cfg.RateLimitWrites},
		Logger:       a.log,
		LinkBase:     a.LinkBase,
	}); err != nil {
		return err
	}
	docs.RegisterOperator(e, openapi.OperatorYAML)
	// The console calls the operator API in process, through the finished handler.
	if err := console.Register(e, console.Deps{
		Operators: a.operators, API: a.inProcessHandler, OperatorBase: operatorapi.BasePath, State: a.store,
		Secure: a.cfg.Env == config.Production, Secrets: a.cfg.Secrets, Logger: a.log, Now: store.Now,
	}); err != nil {
		return err
	}
	return a.openDashboard(e, networks)
}

// openSettlement builds the settlement accounts' service: with PAYSTACK_SECRET_KEY,
// Paystack lists the banks and resolves accounts; without it, listing banks and
// setting an account answer 503 while stored accounts are still read.
func (a *App) openSettlement() *settlement.Service {
	d := settlement.Deps{Store: a.store, Begin: store.For(a.store, func(tx *store.Tx) settlement.Tx { return tx }).WithTx,
		Audit: a.audit, Now: store.Now, Logger: a.log}
	if p := a.cfg.Paystack; p.On() {
		d.Provider = paystack.New(p.BaseURL, p.SecretKey, p.Timeout)
	} else {
		a.log.Info("PAYSTACK_SECRET_KEY is not set: banks cannot be listed nor settlement accounts set (503)")
	}
	return settlement.New(d)
}

// inProcessHandler is the handler the console calls in process: the finished
// handler, wrapped by CheckInProcess's wrapper when a test set one.
func (a *App) inProcessHandler() http.Handler {
	if a.inProcessWrap != nil {
		return a.inProcessWrap(a.handler)
	}
	return a.handler
}

// CheckInProcess wraps the handler the console calls in process (never the one
// the listener serves) with wrap: tests check every answer the console receives
// against the operator contract, as they check their clients' answers. Call it
// before the first request.
func (a *App) CheckInProcess(wrap func(http.Handler) http.Handler) { a.inProcessWrap = wrap }

// Approvals returns four eyes' proposals (metrics and tests read them).
func (a *App) Approvals() *approvals.Service { return a.approvals }

// warnLoneAdmins logs a WARN while the team has not been given roles: more than
// one operator, every one an admin (as the migration to roles left them), so
// everyone can still do everything.
func (a *App) warnLoneAdmins(ctx context.Context) {
	ops, err := a.operators.List(ctx)
	if err != nil || len(ops) < 2 {
		return
	}
	for _, o := range ops {
		if len(o.Roles) != 1 || o.Roles[0] != operators.Admin {
			return
		}
	}
	a.log.WarnContext(ctx, "every operator is an admin: give each the roles of their work (partnerd operators roles ID --set treasury,...)",
		"operators", len(ops))
}

// Operators returns the operator service (for the operators command and tests).
func (a *App) Operators() *operators.Service { return a.operators }

// Keys returns the API key service (for the partners keys command).
func (a *App) Keys() *apikeys.Service { return a.keys }

// Actions returns the operators' use cases: the command line's account and key
// changes run through them too (as actor.CLI), so they are audited alike.
func (a *App) Actions() *actions.Service { return a.actions }

// PartnerUsers returns the partners' dashboard users (the partners users command
// invites through it, as actor.CLI).
func (a *App) PartnerUsers() *partnerusers.Service { return a.partnerUsers }

// Unmatched returns the unmatched-deposit service (the chain watcher records into it).
func (a *App) Unmatched() *refunds.Service { return a.unmatched }

// Lifecycle returns the lifecycle engine (tests drive deposits through it).
func (a *App) Lifecycle() *lifecycle.Engine { return a.lifecycle }

// operationsOf reads the back office's overview for the metrics read at scrape
// time, so the alert rules see the same counts an operator sees in the console.
func operationsOf(b *backoffice.Service) func(context.Context) (metrics.Operations, error) {
	return func(ctx context.Context) (metrics.Operations, error) {
		o, err := b.Overview(ctx)
		if err != nil {
			return metrics.Operations{}, err
		}
		ops := metrics.Operations{Stages: map[string]float64{}, FailingWebhookEndpoints: float64(len(o.FailingWebhooks))}
		for _, s := range o.Stages {
			ops.Stages[string(s.Stage)] = float64(s.Count)
		}
		w := o.RefundWork
		ops.RefundWork = map[string]float64{"unmatched": float64(w.Unmatched), "excess": float64(w.Excess),
			"short": float64(w.Short), "dust": float64(w.Dust), "failed": float64(w.Failed)}
		sw := o.Screening
		ops.Screening = map[string]float64{"held": float64(sw.Held), "unknown": float64(sw.Unknown), "pending": float64(sw.Pending)}
		return ops, nil
	}
}
