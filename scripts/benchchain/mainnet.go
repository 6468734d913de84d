package main

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"partnerd/gen/client"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/store"
)

// mainnetParams are the mainnet scenario's sizes.
type mainnetParams struct {
	issued   int           // transactions created (deposit addresses issued), split over the networks
	deposits int           // deposits to issued addresses in each network's backlog
	blocks   int           // backlog blocks per network
	density  int           // transfers per block to addresses never issued
	steady   time.Duration // steady-state window at real block times
	poll     time.Duration
}

// network is one network under test: its chain in its node's dialect.
type network struct {
	name      string
	chain     *devnet.Chain
	token     common.Address
	decimals  int
	blockTime time.Duration // the network's real block time
}

// mainnet measures both networks at mainnet density behind their nodes' dialects
// with the providers' caps on (5,000 blocks, 10,000 results per eth_getLogs).
func mainnet(ctx context.Context, dbURL string, p mainnetParams) error {
	bsc, err := devnet.StartDialect(0, devnet.BSC)
	if err != nil {
		return err
	}
	defer bsc.Close()
	tron, err := devnet.StartDialect(0, devnet.JavaTron)
	if err != nil {
		return err
	}
	defer tron.Close()
	nets := []*network{{name: chain.BEP20, chain: bsc, decimals: 18, blockTime: 450 * time.Millisecond},
		{name: chain.TRC20, chain: tron, decimals: 6, blockTime: 3 * time.Second}}
	var contracts []string
	vars := map[string]string{
		"DATABASE_URL": dbURL, "CHAIN_POLL_INTERVAL": p.poll.String(),
		"RATE_LIMIT_WRITES": "1000000/1s", "RATE_LIMIT_READS": "1000000/1s",
	}
	for _, n := range nets {
		if n.token, err = n.chain.Deploy(ctx, uint8(n.decimals)); err != nil {
			return err
		}
		n.chain.Proxy.SetCaps(5000, 10000)
		id, err := n.chain.ChainID(ctx)
		if err != nil {
			return err
		}
		up := strings.ToUpper(n.name)
		vars["CHAIN_RPC_"+up], vars["CHAIN_ID_"+up] = n.chain.URL, id
		contracts = append(contracts, fmt.Sprintf("usdt:%s=%s/%d", n.name, chain.FormatAddress(n.name, n.token), n.decimals))
	}
	vars["TOKEN_CONTRACTS"] = strings.Join(contracts, ",")
	srv, c, err := startWithPartner(ctx, vars)
	if err != nil {
		return err
	}

	// 1. Issued addresses: transactions on both networks.
	t0 := time.Now()
	issued, err := createMany(ctx, c, p.issued, func(i int) string { return nets[i%2].name })
	if err != nil {
		srv.stop()
		return err
	}
	fmt.Printf("issued: %d transactions (deposit addresses), %d per network, created in %s\n", p.issued, p.issued/2, time.Since(t0).Round(time.Millisecond))
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		srv.stop()
		return err
	}
	defer st.Close()
	for _, n := range nets {
		if err := waitNet(ctx, n, st, time.Minute); err != nil {
			srv.stop()
			return err
		}
	}
	srv.stop()

	// 2. Backlog catch-up, both networks at once (one scanner each).
	paid := 0
	for i, n := range nets {
		var pay []client.Transaction
		for j := i; j < len(issued) && len(pay) < p.deposits; j += 2 {
			pay = append(pay, issued[j])
		}
		t := time.Now()
		made, err := fill(ctx, n, p.blocks, p.density, pay)
		if err != nil {
			return err
		}
		paid += made
		fmt.Printf("%s backlog: %d blocks × %d transfers to addresses never issued, %d deposits, mined in %s\n",
			n.name, p.blocks, p.density, made, time.Since(t).Round(time.Millisecond))
	}
	before := map[string]int{}
	for _, n := range nets {
		before[n.name] = n.chain.Proxy.Calls("eth_getLogs")
	}
	t1 := time.Now()
	if srv, err = start(vars); err != nil {
		return err
	}
	defer func() { srv.stop() }()
	var wg sync.WaitGroup
	results := make([]string, len(nets))
	errs := make([]error, len(nets))
	for i, n := range nets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := waitNet(ctx, n, st, 10*time.Minute); err != nil {
				errs[i] = err
				return
			}
			took := time.Since(t1)
			logs := n.chain.Proxy.Calls("eth_getLogs") - before[n.name]
			results[i] = fmt.Sprintf("%s catch-up: %d blocks (%d logs) in %s: %.0f blocks/s, %d eth_getLogs",
				n.name, p.blocks, p.blocks*p.density, took.Round(time.Millisecond), float64(p.blocks)/took.Seconds(), logs)
		}()
	}
	wg.Wait()
	for i := range nets {
		if errs[i] != nil {
			return errs[i]
		}
		fmt.Println(results[i])
	}
	found, err := st.ChainTransfers(ctx, false, 10*p.issued+10)
	if err != nil {
		return err
	}
	fmt.Printf("deposits recorded: %d (want %d)\n", len(found), paid)
	if len(found) != paid {
		return fmt.Errorf("the watcher recorded %d deposits of the %d in the backlog", len(found), paid)
	}
	fmt.Printf("metrics after catch-up: %s\n", capErrors(srv))

	// 3. Steady state at the real block times: lag and RPC calls, once the
	// backlog's deposits are final (a deposit waiting for finality costs one more
	// call a poll until then).
	for _, n := range nets {
		for i := 0; ; i++ {
			if i%10 == 0 {
				n.chain.Backend.Commit()
			}
			left, err := st.PendingChainTransfers(ctx, n.name)
			if err != nil {
				return err
			}
			if len(left) == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, p.steady)
	defer cancel()
	type sample struct{ lags []int }
	samples := make([]sample, len(nets))
	calls0 := make([]int, len(nets))
	methods := []string{"eth_blockNumber", "eth_getLogs", "eth_getBlockByNumber", "eth_chainId"}
	byMethod0 := make([][]int, len(nets))
	mined := make([]int, len(nets))
	for i, n := range nets {
		calls0[i] = n.chain.Proxy.Calls("")
		for _, m := range methods {
			byMethod0[i] = append(byMethod0[i], n.chain.Proxy.Calls(m))
		}
		wg.Add(2)
		go func() { // the chain: a block every blockTime at mainnet density
			defer wg.Done()
			tick := time.NewTicker(n.blockTime)
			defer tick.Stop()
			for {
				select {
				case <-sctx.Done():
					return
				case <-tick.C:
					if _, err := fill(ctx, n, 1, p.density, nil); err != nil {
						return
					}
					mined[i]++
				}
			}
		}()
		go func() { // the lag, sampled every 20 ms
			defer wg.Done()
			for sctx.Err() == nil {
				head, err1 := n.chain.Backend.Client().BlockNumber(ctx)
				cur, err2 := st.ChainCursor(ctx, n.name)
				if err1 == nil && err2 == nil && cur != nil && head >= cur.Block {
					samples[i].lags = append(samples[i].lags, int(head-cur.Block))
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	for i, n := range nets {
		calls := n.chain.Proxy.Calls("") - calls0[i]
		lags := samples[i].lags
		sort.Ints(lags)
		perBlock := float64(calls) / float64(max(mined[i], 1))
		perDay := float64(calls) / p.steady.Seconds() * 86400
		var parts []string
		for j, m := range methods {
			parts = append(parts, fmt.Sprintf("%s %d", m, n.chain.Proxy.Calls(m)-byMethod0[i][j]))
		}
		fmt.Printf("%s steady state (%s blocks, %d transfers each, CHAIN_POLL_INTERVAL=%s, %s): lag p50 %d, p90 %d, max %d blocks; %d RPC calls (%s) for %d blocks: %.2f a block, %.0f a day\n",
			n.name, n.blockTime, p.density, p.poll, p.steady, pct(lags, 0.5), pct(lags, 0.9), pct(lags, 1), calls, strings.Join(parts, ", "), mined[i], perBlock, perDay)
	}
	return nil
}

func pct(v []int, q float64) int {
	if len(v) == 0 {
		return -1
	}
	return v[int(q*float64(len(v)-1))]
}

// fill mines blocks blocks holding density transfers each to random addresses,
// and the deposits paying pay spread over them (at most one a block); it returns
// how many deposits it made.
func fill(ctx context.Context, n *network, blocks, density int, pay []client.Transaction) (int, error) {
	every := max(1, blocks/max(len(pay), 1))
	k := 0
	one := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n.decimals)), nil)
	for b := 0; b < blocks; b++ {
		tos := make([]common.Address, density)
		for i := range tos {
			_, _ = cryptoRand(tos[i][:])
		}
		if err := n.chain.TransferMany(ctx, n.token, tos, one); err != nil {
			return k, err
		}
		if b%every == 0 && k < len(pay) {
			to, err := chain.ParseAddress(n.name, pay[k].DepositAddress)
			if err != nil {
				return k, err
			}
			raw, err := devnet.Units(pay[k].CryptoAmount, n.decimals)
			if err != nil {
				return k, err
			}
			if err := n.chain.TransferMany(ctx, n.token, []common.Address{to}, raw); err != nil {
				return k, err
			}
			k++
		}
		n.chain.Backend.Commit()
	}
	return k, nil
}

// waitNet waits until the network's cursor reaches its chain's head.
func waitNet(ctx context.Context, n *network, st *store.Store, limit time.Duration) error {
	head, err := n.chain.Backend.Client().BlockNumber(ctx)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		cur, err := st.ChainCursor(ctx, n.name)
		if err != nil {
			return err
		}
		if cur != nil && cur.Block >= head {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("%s: the scanner did not reach block %d within %s", n.name, head, limit)
}

// createMany creates n transactions, the network of the i-th given by network.
func createMany(ctx context.Context, c *client.ClientWithResponses, n int, networkOf func(int) string) ([]client.Transaction, error) {
	txs := make([]client.Transaction, n)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fiat := "15500"
				res, err := c.CreateTransactionWithResponse(ctx, &client.CreateTransactionParams{},
					client.CreateTransactionRequest{MerchantReference: fmt.Sprintf("BENCH-%d", i), CryptoCurrency: "usdt", Network: networkOf(i), FiatAmount: &fiat},
					func(_ context.Context, r *http.Request) error {
						r.Header.Set("Idempotency-Key", uuid.NewString())
						return nil
					})
				if err == nil && res.JSON201 == nil {
					err = fmt.Errorf("create: %d %s", res.StatusCode(), res.Body)
				}
				if err != nil {
					once.Do(func() { first = err })
					continue
				}
				txs[i] = res.JSON201.Data
			}
		}()
	}
	for i := range txs {
		next <- i
	}
	close(next)
	wg.Wait()
	return txs, first
}

// metricsText reads the server's /metrics.
func metricsText(s *server) (string, error) {
	res, err := http.Get(strings.TrimSuffix(s.api, "/api/v1/partner") + "/metrics")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	all, err := io.ReadAll(res.Body)
	return string(all), err
}

// errCounts are partnerd_chain_rpc_errors_total's series: network → kind → count.
type errCounts map[string]map[string]float64

// rpcErrors reads partnerd_chain_rpc_errors_total from the server's /metrics
// (nil when it cannot be read).
func rpcErrors(s *server) errCounts {
	text, err := metricsText(s)
	if err != nil {
		return nil
	}
	out := errCounts{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, "partnerd_chain_rpc_errors_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		var network, kind string
		for _, l := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(l, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "network":
				network = v
			case "kind":
				kind = v
			}
		}
		var n float64
		if _, err := fmt.Sscan(value, &n); err != nil {
			continue
		}
		if out[network] == nil {
			out[network] = map[string]float64{}
		}
		out[network][kind] = n
	}
	return out
}

// since returns the network's counts that grew since before ("kind +n, …"; "":
// none).
func (c errCounts) since(before errCounts, network string) string {
	var parts []string
	for kind, n := range c[network] {
		if d := n - before[network][kind]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s +%.0f", kind, d))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// capErrors reads the RPC error counters from the server's /metrics.
func capErrors(s *server) string {
	all, err := metricsText(s)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, line := range strings.Split(all, "\n") {
		if strings.HasPrefix(line, "partnerd_chain_rpc_errors_total{") && !strings.HasSuffix(line, " 0") {
			b.WriteString(strings.TrimPrefix(line, "partnerd_chain_rpc_errors_total") + "; ")
		}
	}
	if b.Len() == 0 {
		return "no RPC errors"
	}
	return "rpc_errors_total " + b.String()
}
