package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"partnerd/internal/config"
	"partnerd/internal/jobs"
	"partnerd/internal/lifecycle"
	"partnerd/internal/screening"
	"partnerd/internal/store"
)

// openScreening builds the screening service from SCREENING (nil when off): the
// list screener over the store, the HTTP service; the oracles join once their
// networks' chain providers exist (addOracles). Staging imports the embedded
// sample list when no list of its source was ever imported.
func (a *App) openScreening(ctx context.Context) error {
	cfg, st := a.cfg, a.store
	if !cfg.Screening.On() {
		a.log.Warn("SCREENING=off: deposits are not screened; their funds are sold, paid out and sent back without a sanctions check")
		return nil
	}
	var screeners []screening.Screener
	if cfg.Screening.Has("list") {
		screeners = append(screeners, screening.NewList(st))
		if cfg.Env == config.Staging {
			if err := importSample(ctx, st); err != nil {
				return err
			}
		}
	}
	if cfg.Screening.Has("api") {
		api, err := screening.NewAPI(cfg.Screening.APIURL, cfg.Screening.APIKey, screening.APIOptions{})
		if err != nil {
			return fmt.Errorf("SCREENING_API_URL: %w", err)
		}
		screeners = append(screeners, api)
	}
	a.screening = screening.New(st, screening.Config{
		Screeners: screeners, FailOpen: cfg.Screening.FailOpen, Retry: cfg.Screening.Retry,
		Now: store.Now, Log: a.log.With("component", "screening"), Observer: a.metrics,
	})
	return nil
}

// addOracles adds an oracle screener for each network SCREENING_ORACLE_<NETWORK>
// names, asked through that network's chain providers. A network without
// providers cannot be asked: production refuses to start, staging warns.
func (a *App) addOracles() error {
	if a.screening == nil || !a.cfg.Screening.Has("oracle") {
		return nil
	}
	for network, contract := range a.cfg.Screening.Oracles {
		pool := a.watchers.pool(network)
		if pool == nil {
			if a.cfg.Env == config.Production {
				return fmt.Errorf("SCREENING_ORACLE_%s: the network has no chain providers (CHAIN_RPC_%s) to ask the oracle through",
					strings.ToUpper(network), strings.ToUpper(network))
			}
			a.log.Warn("sanctions oracle not asked: its network has no chain providers", "network", network)
			continue
		}
		a.screening.Add(screening.NewOracle(network, contract, pool))
	}
	return nil
}

// jobScreener is the screening job's worker (nil when screening is off).
func (a *App) jobScreener() jobs.TransactionScreener {
	if a.screening == nil {
		return nil
	}
	return a.screening
}

// importSample imports the embedded sample list once (staging).
func importSample(ctx context.Context, st *store.Store) error {
	have, err := st.HasScreeningSource(ctx, screening.SampleSource)
	if err != nil || have {
		return err
	}
	entries, err := screening.ParseList(strings.NewReader(screening.Sample))
	if err != nil {
		return err
	}
	published, _ := time.Parse(time.DateOnly, screening.SamplePublished)
	_, _, err = st.ImportScreeningList(ctx, screening.SampleSource, published, entries, store.Now())
	return err
}

// screeningDegraded is /readyz's reason while transactions wait on a screener that
// cannot answer (their funds are held until it does: production fails closed).
func (a *App) screeningDegraded(ctx context.Context) []string {
	if a.screening == nil {
		return nil
	}
	n, err := a.store.CountInScreening(ctx, []lifecycle.Screening{lifecycle.ScreeningUnknown})
	if err != nil || n[lifecycle.ScreeningUnknown] == 0 {
		return nil
	}
	return []string{fmt.Sprintf("screening: %d transaction(s) wait on a screener that cannot answer; their funds are held until it does",
		n[lifecycle.ScreeningUnknown])}
}
