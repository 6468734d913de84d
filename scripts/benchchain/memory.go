package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/store"
)

// memoryParams are the memory scenario's sizes.
type memoryParams struct {
	issued   int           // transactions created (deposit addresses issued), split over the networks
	deposits int           // deposits to issued addresses in each network's backlog
	blocks   int           // backlog blocks per network
	density  int           // transfers per block to addresses never issued
	quiet    float64       // transfers a block of the quiet token's steady state (most blocks hold none)
	others   int           // other contracts' Transfer logs in each bsc block's logsBloom (memChain.others)
	steady   time.Duration // steady-state window (wall time)
	poll     time.Duration // CHAIN_POLL_INTERVAL at mainnet cadence
	scale    int           // mainnet time ÷ wall time in the steady state
	// cpuProfile, blockProfile and mutexProfile name files for the catch-up's
	// profiles ("" : none).
	cpuProfile, blockProfile, mutexProfile string
}

// memNet is one network under test, its node answering from memory.
type memNet struct {
	name      string
	node      *memNode
	replica   *memNode   // a second provider of the same chain
	endpoints []*memNode // the providers in use
	decimals  int
	blockTime time.Duration // the network's real block time
}

// memory measures both networks behind nodes answering from memory: the
// catch-up of a backlog with the node's own time taken out, then the lag and the
// calls a day while the nodes mine at mainnet cadence, scaled down.
func memory(ctx context.Context, dbURL string, p memoryParams) error {
	nets := []*memNet{{name: chain.BEP20, decimals: 18, blockTime: 450 * time.Millisecond},
		{name: chain.TRC20, decimals: 6, blockTime: 3 * time.Second}}
	poll := p.poll / time.Duration(p.scale)
	vars := map[string]string{
		"DATABASE_URL": dbURL, "CHAIN_POLL_INTERVAL": poll.String(),
		"RATE_LIMIT_WRITES": "1000000/1s", "RATE_LIMIT_READS": "1000000/1s",
	}
	var contracts []string
	for _, n := range nets {
		node, err := startMemNode(n.name, n.blockTime)
		if err != nil {
			return err
		}
		defer node.Close()
		n.node = node
		if n.name == chain.BEP20 {
			node.others = p.others
		}
		node.mine(100, float64(p.density), nil)
		up := strings.ToUpper(n.name)
		vars["CHAIN_RPC_"+up], vars["CHAIN_ID_"+up] = node.URL, node.chainID.String()
		contracts = append(contracts, fmt.Sprintf("usdt:%s=%s/%d", n.name, chain.FormatAddress(n.name, node.contract), n.decimals))
	}
	vars["TOKEN_CONTRACTS"] = strings.Join(contracts, ",")
	fmt.Printf("memory nodes: bsc and java-tron shapes, %d transfers a block (the quiet token: %g), caps 5,000 blocks and 10,000 results per eth_getLogs; bsc blocks' logsBloom also holds %d other contracts' Transfer logs; CHAIN_POLL_INTERVAL=%s (%s at mainnet cadence ÷ %d)\n",
		p.density, p.quiet, p.others, poll, p.poll, p.scale)

	// 1. Issued addresses: transactions on both networks.
	srv, c, err := startWithPartner(ctx, vars)
	if err != nil {
		return err
	}
	t0 := time.Now()
	issued, err := createMany(ctx, c, p.issued, func(i int) string { return nets[i%2].name })
	if err != nil {
		srv.stop()
		return err
	}
	fmt.Printf("issued: %d transactions (deposit addresses), %d per network, created in %s\n", p.issued, p.issued/2, time.Since(t0).Round(time.Millisecond))
	st, err := store.Open(ctx, withApp(dbURL, "benchchain_rig"))
	if err != nil {
		srv.stop()
		return err
	}
	defer st.Close()
	var pg *sql.DB // to read the catch-up's PostgreSQL backends' CPU time
	if strings.HasPrefix(dbURL, "postgres") {
		if pg, err = sql.Open("pgx", dbURL); err != nil {
			srv.stop()
			return err
		}
		defer pg.Close()
	}
	for _, n := range nets {
		if err := waitMem(ctx, n, st, time.Minute, 5*time.Millisecond); err != nil {
			srv.stop()
			return err
		}
	}
	srv.stop()

	// 2. The backlog, both networks at once (one scanner each).
	paid := 0
	for i, n := range nets {
		var pay []payment
		for j := i; j < len(issued) && len(pay) < p.deposits; j += 2 {
			to, err := chain.ParseAddress(n.name, issued[j].DepositAddress)
			if err != nil {
				return err
			}
			raw, err := devnet.Units(issued[j].CryptoAmount, n.decimals)
			if err != nil {
				return err
			}
			pay = append(pay, payment{to: to, raw: raw})
		}
		t := time.Now()
		made := n.node.mine(p.blocks, float64(p.density), pay)
		paid += made
		fmt.Printf("%s backlog: %d blocks × %d transfers to addresses never issued, %d deposits, rendered in %s\n",
			n.name, p.blocks, p.density, made, time.Since(t).Round(time.Millisecond))
	}
	stopProfiles, err := startProfiles(p)
	if err != nil {
		return err
	}
	busy0 := make([]time.Duration, len(nets))
	logs0 := make([]int, len(nets))
	headers0 := make([]int, len(nets))
	for i, n := range nets {
		busy0[i], logs0[i], headers0[i] = n.node.Busy(), n.node.Calls("eth_getLogs"), n.node.Calls("eth_getBlockByNumber")
	}
	var cpu0 cpuTimes
	cpu0.read()
	app := fmt.Sprintf("benchchain_catchup_%d", time.Now().UnixNano())
	vars["DATABASE_URL"] = withApp(dbURL, app)
	if srv, err = start(vars); err != nil {
		stopProfiles()
		return err
	}
	t1 := time.Now() // the scanners start as the server does
	defer func() { srv.stop() }()
	var wg sync.WaitGroup
	results := make([]string, len(nets))
	errs := make([]error, len(nets))
	sum := make([]memSummary, len(nets))
	for i, n := range nets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := waitMem(ctx, n, st, 10*time.Minute, 25*time.Millisecond); err != nil {
				errs[i] = err
				return
			}
			took := time.Since(t1)
			busy := n.node.Busy() - busy0[i]
			logs := n.node.Calls("eth_getLogs") - logs0[i]
			headers := n.node.Calls("eth_getBlockByNumber") - headers0[i]
			rate := float64(p.blocks) / (took - busy).Seconds()
			sum[i] = memSummary{rate: rate, logs: logs, headers: headers}
			results[i] = fmt.Sprintf("%s catch-up: %d blocks (%d logs) in %s, node %s (%.1f %%): %.0f blocks/s and %.0f logs/s without the node (%.0f blocks/s wall), %d eth_getLogs, %d eth_getBlockByNumber",
				n.name, p.blocks, p.blocks*p.density, took.Round(time.Millisecond), busy.Round(time.Millisecond), 100*busy.Seconds()/took.Seconds(),
				rate, rate*float64(p.density), float64(p.blocks)/took.Seconds(), logs, headers)
		}()
	}
	wg.Wait()
	var cpu1 cpuTimes
	cpu1.read()
	pgCPU := pgBackends(pg, app)
	stopProfiles()
	for i := range nets {
		if errs[i] != nil {
			return errs[i]
		}
		fmt.Println(results[i])
	}
	wall := time.Since(t1).Seconds()
	db := "the database's in this process's (SQLite)"
	if pgCPU >= 0 {
		db = fmt.Sprintf("PostgreSQL's backends %.2f s (%.2f cores)", pgCPU, pgCPU/wall)
	}
	fmt.Printf("catch-up CPU over %.2f s: this process %.2f s (%.2f cores; the nodes' share is in their time above), %s; the machine %s\n",
		wall, cpu1.self-cpu0.self, (cpu1.self-cpu0.self)/wall, db, cpu1.machine(cpu0))
	found, err := st.ChainTransfers(ctx, false, 10*p.issued+10)
	if err != nil {
		return err
	}
	fmt.Printf("deposits recorded: %d (want %d)\n", len(found), paid)
	if len(found) != paid {
		return fmt.Errorf("the watcher recorded %d deposits of the %d in the backlog", len(found), paid)
	}
	fmt.Printf("metrics after catch-up: %s\n", capErrors(srv))

	// 3. Steady state at mainnet cadence ÷ scale: one provider a network; two (a
	// replica of the same chain second in CHAIN_RPC_<NETWORK>); and push, BNB Smart
	// Chain's provider over WebSocket (java-tron serves no WebSocket JSON-RPC);
	// then a quiet token (p.quiet transfers a block), polled and pushed: there
	// most blocks hold no log of the token, and the watcher's cross-check of
	// empty answers reads headers (bsc) or asks again once deep (java-tron).
	for _, n := range nets {
		if n.replica, err = n.node.replica(); err != nil {
			return err
		}
		defer n.replica.Close()
	}
	one := func(n *memNet) (string, []*memNode) { return n.node.URL, []*memNode{n.node} }
	push := func(n *memNet) (string, []*memNode) {
		if n.name == chain.BEP20 {
			return n.node.WSURL, []*memNode{n.node}
		}
		return n.node.URL, []*memNode{n.node}
	}
	busy := float64(p.density)
	runs := []struct {
		label   string
		density float64
		rpc     func(n *memNet) (string, []*memNode)
	}{
		{"one provider (http)", busy, one},
		{"two providers (http, http)", busy, func(n *memNet) (string, []*memNode) {
			return n.node.URL + "," + n.replica.URL, []*memNode{n.node, n.replica}
		}},
		{"push (bep20 over ws, trc20 over http)", busy, push},
		{fmt.Sprintf("quiet token (%g transfers a block), one provider (http)", p.quiet), p.quiet, one},
		{fmt.Sprintf("quiet token (%g transfers a block), push (bep20 over ws, trc20 over http)", p.quiet), p.quiet, push},
	}
	for i, run := range runs {
		if i > 0 {
			srv.stop()
			for _, n := range nets {
				vars["CHAIN_RPC_"+strings.ToUpper(n.name)], n.endpoints = run.rpc(n)
			}
			if srv, err = start(vars); err != nil {
				return err
			}
		} else {
			for _, n := range nets {
				_, n.endpoints = run.rpc(n)
			}
		}
		if err := settleMem(ctx, nets, st, p); err != nil {
			return err
		}
		errs0 := rpcErrors(srv)
		rows, err := memSteady(ctx, nets, st, p, run.label, run.density)
		if err != nil {
			return err
		}
		errs1 := rpcErrors(srv)
		for i, n := range nets {
			rows[i].errors = errs1.since(errs0, n.name)
			if rows[i].errors != "" {
				fmt.Printf("%s steady state, %s: rpc_errors_total %s\n", n.name, run.label, rows[i].errors)
			}
			sum[i].steady = append(sum[i].steady, rows[i])
		}
	}
	printSummary(nets, sum, p)
	return nil
}

// memSummary is what the memory scenario measured of one network.
type memSummary struct {
	rate          float64 // catch-up blocks/s without the node's time
	logs, headers int     // the catch-up's eth_getLogs and eth_getBlockByNumber
	steady        []steadyRow
}

// steadyRow is one steady-state window of one network, in calls a day at mainnet
// cadence (CHAIN_POLL_INTERVAL at -poll, the network's block time).
type steadyRow struct {
	label         string
	lag           [3]int // p50, p90, max
	perDay        float64
	perBlock      float64
	methods       map[string]float64 // calls a day by method
	errors        string             // rpc_errors_total counted in the window ("": none)
	blocks, calls int
}

// printSummary writes the memory scenario's figures per network as a table: the
// catch-up's blocks/s and calls, then each steady state's calls a day.
func printSummary(nets []*memNet, sum []memSummary, p memoryParams) {
	fmt.Printf("summary (calls a day at mainnet cadence, CHAIN_POLL_INTERVAL=%s; eth_getLogs, eth_getBlockByNumber, eth_blockNumber a day):\n", p.poll)
	fmt.Println("| network | measure | blocks/s or lag p50/p90/max | calls a day | eth_getLogs | eth_getBlockByNumber | eth_blockNumber | calls a block |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for i, n := range nets {
		s := sum[i]
		fmt.Printf("| %s | catch-up, %d blocks | %.0f blocks/s | – | %d | %d | – | – |\n", n.name, p.blocks, s.rate, s.logs, s.headers)
		for _, r := range s.steady {
			fmt.Printf("| %s | %s | %d / %d / %d | %.0f | %.0f | %.0f | %.0f | %.2f |\n", n.name, r.label, r.lag[0], r.lag[1], r.lag[2], r.perDay,
				r.methods["eth_getLogs"], r.methods["eth_getBlockByNumber"], r.methods["eth_blockNumber"], r.perBlock)
		}
	}
}

// settleBlocks is how many blocks settleMem mines at once after a start: more
// than the watcher's VerifyDepth (twice the confirmations: 30 on bep20, 38 on
// trc20 by default), so that the blocks below the cursor it asks again once
// after each start are deep, and asked, before the window that measures the
// steady state.
const settleBlocks = 40

// settleMem mines settleBlocks blocks, then until every network is scanned to
// its head and no deposit waits for finality (a waiting deposit costs one more
// call a poll).
func settleMem(ctx context.Context, nets []*memNet, st *store.Store, p memoryParams) error {
	for _, n := range nets {
		n.node.mine(settleBlocks, float64(p.density), nil)
		for {
			left, err := st.PendingChainTransfers(ctx, n.name)
			if err != nil {
				return err
			}
			if len(left) == 0 {
				break
			}
			n.node.mine(1, float64(p.density), nil)
			time.Sleep(n.blockTime / time.Duration(p.scale))
		}
		if err := waitMem(ctx, n, st, time.Minute, 10*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// memSteady mines blocks of density transfers at each network's block time ÷
// scale for p.steady, sampling the lag (head − scanned) and counting each
// provider's calls; it returns each network's figures.
func memSteady(ctx context.Context, nets []*memNet, st *store.Store, p memoryParams, label string, density float64) ([]steadyRow, error) {
	sctx, cancel := context.WithTimeout(ctx, p.steady)
	defer cancel()
	methods := []string{"eth_blockNumber", "eth_getLogs", "eth_getBlockByNumber", "eth_chainId", "eth_subscribe", "eth_syncing"}
	lags := make([][]int, len(nets))
	calls0 := make([][]map[string]int, len(nets))
	mined := make([]int, len(nets))
	heads0 := make([]uint64, len(nets))
	var wg sync.WaitGroup
	for i, n := range nets {
		heads0[i] = n.node.Head()
		for _, e := range n.endpoints {
			c := map[string]int{"": e.Calls("")}
			for _, m := range methods {
				c[m] = e.Calls(m)
			}
			calls0[i] = append(calls0[i], c)
		}
		every := n.blockTime / time.Duration(p.scale)
		wg.Add(2)
		go func() { // the chain: a block every blockTime ÷ scale
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-sctx.Done():
					return
				case <-tick.C:
					n.node.mine(1, density, nil)
					mined[i]++
				}
			}
		}()
		go func() { // the lag, sampled five times a block
			defer wg.Done()
			for sctx.Err() == nil {
				head := n.node.Head()
				cur, err := st.ChainCursor(ctx, n.name)
				if err == nil && cur != nil && head >= cur.Block {
					lags[i] = append(lags[i], int(head-cur.Block))
				}
				time.Sleep(every / 5)
			}
		}()
	}
	wg.Wait()
	simulated := p.steady * time.Duration(p.scale)
	rows := make([]steadyRow, len(nets))
	for i, n := range nets {
		sort.Ints(lags[i])
		total := 0
		var each []string
		byMethod := map[string]float64{}
		for j, e := range n.endpoints {
			calls := e.Calls("") - calls0[i][j][""]
			total += calls
			var parts []string
			for _, m := range methods {
				if d := e.Calls(m) - calls0[i][j][m]; d > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", m, d))
					byMethod[m] += float64(d) / simulated.Seconds() * 86400
				}
			}
			each = append(each, fmt.Sprintf("provider %d: %d (%s), %.0f a day", j+1, calls, strings.Join(parts, ", "), float64(calls)/simulated.Seconds()*86400))
		}
		// The ticker mines a little slower than the block time under load: the
		// calls a block times the network's blocks a day is the cost a day at
		// mainnet cadence.
		perBlock := float64(total) / float64(max(mined[i], 1))
		rows[i] = steadyRow{label: label, lag: [3]int{pct(lags[i], 0.5), pct(lags[i], 0.9), pct(lags[i], 1)},
			perDay: float64(total) / simulated.Seconds() * 86400, perBlock: perBlock, methods: byMethod, blocks: mined[i], calls: total}
		fmt.Printf("%s steady state, %s (%s blocks ÷ %d, %g transfers each, CHAIN_POLL_INTERVAL=%s ÷ %d, %s = %s at mainnet cadence): lag p50 %d, p90 %d, max %d blocks; %d blocks, %d calls, %.2f a block, %.0f a day at CHAIN_POLL_INTERVAL=%s (%.0f a day at a block every %s); %s\n",
			n.name, label, n.blockTime, p.scale, density, p.poll, p.scale, p.steady, simulated, pct(lags[i], 0.5), pct(lags[i], 0.9), pct(lags[i], 1),
			mined[i], total, perBlock, float64(total)/simulated.Seconds()*86400, p.poll, perBlock*86400/n.blockTime.Seconds(), n.blockTime, strings.Join(each, "; "))
		if !n.node.tron {
			fill, empty, maybe := n.node.bloomStats(heads0[i]+1, n.node.Head())
			fmt.Printf("%s steady state, %s: logsBloom %.0f %% of bits set on average; %d blocks without the token's logs, %d of them with a bloom that lets its Transfer be there\n",
				n.name, label, 100*fill, empty, maybe)
		}
	}
	return rows, nil
}

// withApp names the connections of a PostgreSQL URL (application_name), so that
// their backends can be told apart; other URLs are returned as they are.
func withApp(dbURL, name string) string {
	if !strings.HasPrefix(dbURL, "postgres") {
		return dbURL
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// waitMem waits until the network's cursor reaches its node's head, reading the
// cursor every every.
func waitMem(ctx context.Context, n *memNet, st *store.Store, limit, every time.Duration) error {
	head := n.node.Head()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		cur, err := st.ChainCursor(ctx, n.name)
		if err != nil {
			return err
		}
		if cur != nil && cur.Block >= head {
			return nil
		}
		time.Sleep(every)
	}
	return fmt.Errorf("%s: the scanner did not reach block %d within %s", n.name, head, limit)
}

// startProfiles starts the profiles p names and returns what writes them.
func startProfiles(p memoryParams) (func(), error) {
	var stops []func()
	if p.cpuProfile != "" {
		f, err := os.Create(p.cpuProfile)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); _ = f.Close() })
	}
	write := func(name, file string) func() {
		return func() {
			f, err := os.Create(file)
			if err != nil {
				return
			}
			_ = pprof.Lookup(name).WriteTo(f, 0)
			_ = f.Close()
		}
	}
	if p.blockProfile != "" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
		stops = append(stops, write("block", p.blockProfile), func() { runtime.SetBlockProfileRate(0) })
	}
	if p.mutexProfile != "" {
		runtime.SetMutexProfileFraction(5)
		stops = append(stops, write("mutex", p.mutexProfile), func() { runtime.SetMutexProfileFraction(0) })
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}, nil
}
