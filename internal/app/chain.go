package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/chain"
	"partnerd/internal/chain/providers"
	"partnerd/internal/chain/rpc"
	"partnerd/internal/chain/scanner"
	"partnerd/internal/config"
	"partnerd/internal/deposits"
	"partnerd/internal/lifecycle"
	"partnerd/internal/metrics"
	"partnerd/internal/store"
)

// watchers is the deposit watcher of every network with a CHAIN_RPC_* URL.
type watchers struct {
	// off holds, per network whose watcher is off, why (for /readyz and the metric).
	off      map[string]string
	scanners []*scanner.Scanner
	pools    []*providers.Pool
	clients  []*rpc.Client
	// byNetwork is each watched network's pool (the sanctions oracle is asked
	// through it).
	byNetwork map[string]*providers.Pool
	// rescans reads a transaction again for a partner (POST /deposits/rescan)
	// through the network's scanner, and records through the watcher's sink.
	rescans *deposits.Rescanner
}

// pool returns network's provider pool, nil when it is not watched.
func (w *watchers) pool(network string) *providers.Pool {
	if w == nil {
		return nil
	}
	return w.byNetwork[network]
}

// openWatchers builds a scanner per watched network, reading through a pool of
// the network's providers (CHAIN_RPC_<NETWORK>, in order of preference). Each
// provider's chain id is checked first (CHAIN_ID_<NETWORK>): a provider reporting
// another is dropped; with none left, production refuses to start and staging
// switches that network's watcher off. A provider that is down only delays its
// use (the pool checks its chain id once it answers), never the start of the API.
// With tp (nil while traces are off) each scan step is a span, and each call to a
// provider a child of it.
func openWatchers(ctx context.Context, cfg *config.Config, st *store.Store, l *lifecycle.Engine, u *refunds.Service, m *metrics.Metrics,
	progress *progressRecorder, tp trace.TracerProvider, log *slog.Logger) (*watchers, error) {
	cm := m.Chain()
	w := &watchers{off: map[string]string{}, byNetwork: map[string]*providers.Pool{}}
	off := func(network, reason string) {
		w.off[network] = reason
		cm.WatcherOff(network, true)
	}
	for _, n := range cfg.Chain.Off {
		log.Warn("deposit watcher is off for this network: CHAIN_RPC_"+strings.ToUpper(n)+" is unset; deposits arrive only through the sandbox simulator", "network", n)
		off(n, "CHAIN_RPC_"+strings.ToUpper(n)+" is unset: deposits arrive only through the sandbox simulator")
	}
	readers := map[string]deposits.TransactionReader{}
	if len(cfg.Chain.Providers) == 0 {
		w.rescans = deposits.NewRescanner(nil, readers, w.off)
		return w, nil
	}
	sink := deposits.New(l, store.For(st, func(tx *store.Tx) deposits.Tx { return tx }), u, unmatchedLog{m: cm, log: log})
	w.rescans = deposits.NewRescanner(sink, readers, w.off)
	for network, configured := range cfg.Chain.Providers {
		var toks []chain.Token
		for _, t := range cfg.Chain.Tokens {
			if t.Network == network {
				toks = append(toks, t)
			}
		}
		if len(toks) == 0 {
			log.Warn("deposit watcher is off for this network: TOKEN_CONTRACTS lists no contract on it", "network", network)
			off(network, "TOKEN_CONTRACTS lists no contract on it")
			continue
		}
		dialect, err := rpc.For(network)
		if err != nil {
			w.close()
			return nil, err
		}
		idKey := "CHAIN_ID_" + strings.ToUpper(network)
		want := cfg.Chain.ChainIDs[network]
		var members []providers.Provider
		var names []string
		var wrong error
		for i, p := range configured {
			client, err := rpc.New(p.URL, dialect, rpc.Options{Headers: p.Headers, Timeout: cfg.Chain.Timeout})
			if err != nil {
				w.close()
				return nil, fmt.Errorf("CHAIN_RPC_%s: provider %d: %w", strings.ToUpper(network), i+1, err)
			}
			name := providers.Name(p.URL)
			err = scanner.CheckChainID(ctx, client, want)
			if errors.Is(err, scanner.ErrChainID) {
				wrong = err
				log.Error("chain provider dropped: it is not the chain "+idKey+" names", "network", network, "provider", name, "error", err.Error())
				client.Close()
				continue
			} else if err != nil {
				log.Warn("chain provider not reachable at start-up; its chain id is checked once it answers", "network", network, "provider", name, "error", err.Error())
			}
			w.clients = append(w.clients, client)
			members = append(members, providers.Provider{URL: p.URL, Client: client, Rate: p.Rate, ChainIDChecked: err == nil})
			names = append(names, name)
		}
		if len(members) == 0 {
			if cfg.Env == config.Production {
				w.close()
				return nil, fmt.Errorf("%s: %w", idKey, wrong)
			}
			log.Error("deposit watcher is off for this network: the node is not the chain "+idKey+" names (no provider of CHAIN_RPC_"+
				strings.ToUpper(network)+" is)", "network", network, "error", wrong.Error())
			off(network, "no provider of CHAIN_RPC_"+strings.ToUpper(network)+" is on the chain "+idKey+" names")
			continue
		}
		pool := providers.New(providers.Options{Network: network, ChainID: want, MaxLag: cfg.Chain.MaxLag[network],
			CheckDepth: uint64(max(cfg.Confirmations[network], 1)), ReorgDepth: scanner.ReorgDepth(cfg.Confirmations[network]),
			HeadEvery: cfg.Chain.PollInterval, Observer: progress, Log: log.With("component", "chain"), Tracing: tp}, members)
		w.pools = append(w.pools, pool)
		w.byNetwork[network] = pool
		cm.Watch(network)
		sc := scanner.Config{Network: network, Tokens: toks, Confirmations: cfg.Confirmations[network],
			PollInterval: cfg.Chain.PollInterval, ChainID: want, Finality: cfg.Chain.Finality[network], Wake: pool.Wake(),
			Tracing: tp}
		if b, ok := cfg.Chain.StartBlocks[network]; ok {
			sc.StartBlock = &b
		}
		scan := scanner.New(sc, pool, sink, locker{st}, progress, log.With("component", "chain"))
		w.scanners = append(w.scanners, scan)
		readers[network] = scan
		log.Info("deposit watcher on", "network", network, "node", dialect.Node, "providers", strings.Join(names, ","), "tokens", len(toks),
			"confirmations", sc.Confirmations, "chain_id", want.String(), "rpc_timeout", cfg.Chain.Timeout.String())
	}
	return w, nil
}

// degraded lists, per network whose watcher is off, whose every provider waits
// for its operator (a key, a quota or plan, an endpoint), or whose every provider
// is behind or syncing, why ("network: reason"),
// sorted; nil when every network is watched.
func (w *watchers) degraded() []string {
	var out []string
	for n, reason := range w.off {
		out = append(out, n+": deposit watcher is off: "+reason)
	}
	for n, pool := range w.byNetwork {
		if why := pool.Stranded(); len(why) > 0 {
			out = append(out, n+": no provider serves the deposit watcher until its operator acts (fix the key, plan or URL in CHAIN_RPC_"+
				strings.ToUpper(n)+"): "+strings.Join(why, "; "))
		}
		if why := pool.Behind(); len(why) > 0 {
			out = append(out, n+": every provider is behind or syncing, so the deposit watcher waits (nothing is scanned until one catches up; add or switch to another provider in CHAIN_RPC_"+
				strings.ToUpper(n)+" if it lasts): "+strings.Join(why, "; "))
		}
	}
	sort.Strings(out)
	return out
}

// run runs every scanner and provider pool until ctx is done and waits for them.
func (w *watchers) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range w.scanners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Run(ctx)
		}()
	}
	for _, p := range w.pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Run(ctx)
		}()
	}
	wg.Wait()
}

func (w *watchers) close() {
	for _, c := range w.clients {
		c.Close()
	}
}

// locker adapts the store's advisory lock to the scanner.
type locker struct{ st *store.Store }

func (l locker) TryLock(ctx context.Context, name string) (scanner.Lock, bool, error) {
	lk, ok, err := l.st.TryLock(ctx, name)
	if !ok {
		return nil, false, err
	}
	return lk, true, err
}

// unmatchedLog reports unmatched deposits as a log line and a metric.
type unmatchedLog struct {
	m   *metrics.Chain
	log *slog.Logger
}

func (u unmatchedLog) Unmatched(t *deposits.ChainTransfer) {
	u.m.UnmatchedDeposit(t.Network)
	tid := ""
	if t.TransactionID != nil {
		tid = t.TransactionID.String()
	}
	u.log.Warn("unmatched deposit stored for operators", "network", t.Network, "tx_hash", t.TxHash, "log_index", t.LogIndex,
		"to", t.To, "amount", t.Amount.String(), "transaction_id", tid, "note", t.Note)
}
