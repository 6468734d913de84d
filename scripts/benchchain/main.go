// Command benchchain measures the deposit watcher.
//
// The default scenario, -scenario memory, puts both networks behind nodes that
// answer from memory (memnode.go: blocks and Transfer logs rendered once, in
// bsc's and java-tron's shapes — bsc's logsBloom the bloom of the block's logs,
// java-tron's 256 zero bytes —, the providers' caps of 5,000 blocks and 10,000
// results per eth_getLogs, the filter honoured), so what is measured is the
// watcher, not the node; the time spent inside the nodes' handlers is counted and
// taken out:
//
//  1. creates -issued transactions (deposit addresses; half per network);
//  2. stops the service, mines per network a backlog of -blocks blocks (default
//     10,000) of -density transfers to addresses never issued with -deposits
//     deposits spread over it, restarts it and times the catch-up of both
//     networks at once: blocks/s and logs/s without the nodes' time, the
//     process's CPU and PostgreSQL's backends' CPU, and (-cpuprofile,
//     -blockprofile, -mutexprofile) profiles of it, the nodes' samples labelled
//     part=node (go tool pprof -tagignore part=node leaves them out);
//  3. mines at each network's block time ÷ -scale (BNB Smart Chain 0.45 s, Tron
//     3 s) for -steady, with CHAIN_POLL_INTERVAL -poll ÷ -scale, and reports the
//     lag (head − scanned, in blocks) and the calls a day at mainnet cadence, per
//     provider: with one provider, with two (a replica of the chain second in
//     CHAIN_RPC_<NETWORK>), and with push (BNB Smart Chain's provider over
//     WebSocket, waking the scanner on newHeads; java-tron serves no WebSocket),
//     also as calls a day at one block per block time (with push the head and
//     the last block's hash come from the pushed header: BNB Smart Chain's
//     budget is 200,000 calls a day, one eth_getLogs a block); then the same
//     with a quiet token (-quiet transfers a block, so most blocks hold none),
//     polled and pushed: that is where the watcher's cross-check of answers
//     without logs costs calls (headers read on BNB Smart Chain, ranges asked
//     again once deep on java-tron), and -others puts that many other
//     contracts' Transfer logs in each BNB Smart Chain block's bloom, as a busy
//     chain fills it (false positives then hold the scan below a block);
//  4. prints a summary table per network: catch-up blocks/s and calls, and each
//     steady state's calls a day by method.
//
// -scenario mainnet runs both networks behind the in-process chains (go-ethereum's
// simulated backend behind each node's dialect, caps on): the same catch-up and
// steady state at real block times, the chain's cost included. -scenario sparse
// is the first benchmark (bep20 only, -open transactions, a backlog with
// -transfers deposits, detection delay). Several scenarios run in turn when
// comma-separated, each on a database of its own. -smoke (or BENCH_SMOKE=1) runs
// memory and mainnet in seconds at tiny sizes, to prove the script works.
//
//	go run ./scripts/benchchain [-db postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable | -db sqlite:/tmp/bench.db]
//	go run ./scripts/benchchain -cpuprofile /tmp/catchup.prof && go tool pprof -top -tagignore part=node /tmp/catchup.prof
//	go run ./scripts/benchchain -smoke
package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib"

	"partnerd/gen/client"
	"partnerd/internal/app"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/config"
	"partnerd/internal/store"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchchain:", err)
		os.Exit(1)
	}
}

type server struct {
	api  string
	stop func()
	app  *app.App
}

func start(vars map[string]string) (*server, error) {
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var logw io.Writer = io.Discard
	if os.Getenv("BENCH_LOG") != "" {
		logw = os.Stderr
	}
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(logw, nil)))
	if err != nil {
		cancel()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	return &server{api: "http://" + ln.Addr().String() + "/api/v1/partner", app: a, stop: func() {
		cancel()
		<-done
		_ = a.Close()
	}}, nil
}

func run() error {
	dbURL := flag.String("db", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server URL (a fresh schema is used and dropped), or sqlite:PATH")
	open := flag.Int("open", 10000, "open transactions")
	blocks := flag.Int("blocks", 5000, "blocks in the backlog")
	transfers := flag.Int("transfers", 1000, "transfers to open transactions in the backlog")
	samples := flag.Int("samples", 40, "detection delay samples")
	poll := flag.Duration("poll", 3*time.Second, "CHAIN_POLL_INTERVAL")
	smoke := flag.Bool("smoke", os.Getenv("BENCH_SMOKE") != "", "a few seconds at tiny sizes (also BENCH_SMOKE=1): proves the script runs, measures nothing")
	scenario := flag.String("scenario", "", "memory (the default: both networks behind nodes answering from memory; catch-up without the node's time, steady lag and calls a day at mainnet cadence scaled down), mainnet (both networks behind the in-process chains in their nodes' dialects, caps on) or sparse (the first benchmark: bep20, few transfers, detection delay); comma-separated to run several (-smoke: memory,mainnet)")
	issued := flag.Int("issued", 100000, "memory, mainnet: transactions created (deposit addresses issued), split over both networks")
	deposits := flag.Int("deposits", 50, "memory, mainnet: deposits to issued addresses in each network's backlog")
	density := flag.Int("density", 80, "memory, mainnet: transfers per block to addresses never issued")
	quiet := flag.Float64("quiet", 0.05, "memory: transfers a block of the quiet token's steady state (a fraction: most blocks hold none)")
	others := flag.Int("others", 0, "memory: other contracts' Transfer logs in each BNB Smart Chain block's logsBloom (never in the watcher's answers)")
	steady := flag.Duration("steady", 30*time.Second, "memory, mainnet: steady-state window (memory: wall time, mainnet cadence ÷ -scale)")
	scale := flag.Int("scale", 10, "memory: mainnet time ÷ wall time in the steady state (block times and CHAIN_POLL_INTERVAL divided by it)")
	cpuProfile := flag.String("cpuprofile", "", "memory: write a CPU profile of the catch-up to this file")
	blockProfile := flag.String("blockprofile", "", "memory: write a blocking profile of the catch-up to this file")
	mutexProfile := flag.String("mutexprofile", "", "memory: write a mutex profile of the catch-up to this file")
	flag.Parse()
	if *smoke {
		*open, *blocks, *transfers, *samples, *poll = 8, 20, 5, 2, 200*time.Millisecond
		*issued, *deposits, *density, *steady = 40, 5, 10, 3*time.Second
		if *scenario == "" {
			*scenario = "memory,mainnet"
		}
	}
	if *scenario == "" {
		*scenario = "memory"
	}
	ctx := context.Background()
	for i, sc := range strings.Split(*scenario, ",") {
		url := *dbURL
		if strings.HasPrefix(url, "postgres") {
			schemaURL, drop, err := freshSchema(url)
			if err != nil {
				return err
			}
			defer drop()
			url = schemaURL
		} else if i > 0 {
			url += fmt.Sprintf(".%d", i) // each scenario on a database of its own
		}
		fmt.Printf("== scenario %s\n", sc)
		var err error
		switch sc {
		case "memory":
			n := *blocks
			if !isSet("blocks") && !*smoke {
				n = 10000
			}
			window := *steady
			if *smoke && !isSet("steady") {
				window = time.Second // five windows: one provider, two, push; quiet polled, pushed
			}
			err = memory(ctx, url, memoryParams{issued: *issued, deposits: *deposits, blocks: n, density: *density, quiet: *quiet, others: *others, steady: window,
				poll: *poll, scale: *scale, cpuProfile: *cpuProfile, blockProfile: *blockProfile, mutexProfile: *mutexProfile})
		case "mainnet":
			n := *blocks
			if !isSet("blocks") && !*smoke {
				n = 500
			}
			err = mainnet(ctx, url, mainnetParams{issued: *issued, deposits: *deposits, blocks: n, density: *density, steady: *steady, poll: *poll})
		case "sparse":
			err = sparse(ctx, url, *open, *blocks, *transfers, *samples, *poll)
		default:
			err = fmt.Errorf("no scenario %q", sc)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", sc, err)
		}
	}
	return nil
}

// sparse is the first benchmark: bep20 only, open transactions, a backlog with
// transfers deposits, and the detection delay.
func sparse(ctx context.Context, url string, open, blocks, transfers, samples int, poll time.Duration) error {
	ch, err := devnet.Start(0)
	if err != nil {
		return err
	}
	defer ch.Close()
	token, err := ch.Deploy(ctx, 18)
	if err != nil {
		return err
	}
	vars := map[string]string{
		"DATABASE_URL": url, "CHAIN_RPC_BEP20": ch.URL, "CHAIN_ID_BEP20": "1337", "CHAIN_POLL_INTERVAL": poll.String(),
		"TOKEN_CONTRACTS": fmt.Sprintf("usdt:bep20=%s/18", token.Hex()), "CONFIRMATIONS": "bep20=15,trc20=19",
		"RATE_LIMIT_WRITES": "100000/1s", "RATE_LIMIT_READS": "100000/1s",
	}
	srv, err := start(vars)
	if err != nil {
		return err
	}
	_, key, err := srv.app.Partners().CreateAlone(ctx, "bench")
	if err != nil {
		return err
	}
	c, err := newClient(srv.api, key)
	if err != nil {
		return err
	}

	// 2. Open transactions.
	t0 := time.Now()
	txs := make([]client.Transaction, open)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fiat := "15500"
				res, err := c.CreateTransactionWithResponse(ctx, &client.CreateTransactionParams{},
					client.CreateTransactionRequest{MerchantReference: fmt.Sprintf("BENCH-%d", i), CryptoCurrency: "usdt", Network: "bep20", FiatAmount: &fiat},
					func(_ context.Context, r *http.Request) error {
						r.Header.Set("Idempotency-Key", uuid.NewString())
						return nil
					})
				if err == nil && res.JSON201 == nil {
					err = fmt.Errorf("create: %d %s", res.StatusCode(), res.Body)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
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
	select {
	case err := <-errs:
		return err
	default:
	}
	fmt.Printf("open transactions: %d created in %s\n", open, time.Since(t0).Round(time.Millisecond))
	st, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := waitHead(ctx, ch, st, time.Minute); err != nil {
		return err
	}
	srv.stop()

	// 3. Backlog scan rate.
	perm := rand.Perm(open)
	paid := perm[:transfers]
	every := max(1, blocks/transfers)
	k := 0
	for b := 0; b < blocks; b++ {
		if b%every == 0 && k < len(paid) {
			tx := txs[paid[k]]
			to := common.HexToAddress(tx.DepositAddress)
			if _, err := ch.Transfer(ctx, token, to, units(tx.CryptoAmount)); err != nil {
				return err
			}
			var stranger common.Address
			_, _ = cryptoRand(stranger[:])
			if _, err := ch.Transfer(ctx, token, stranger, big.NewInt(1)); err != nil {
				return err
			}
			k++
		}
		ch.Backend.Commit()
	}
	cur, err := st.ChainCursor(ctx, "bep20")
	if err != nil {
		return err
	}
	head, err := ch.Backend.Client().BlockNumber(ctx)
	if err != nil {
		return err
	}
	t1 := time.Now()
	srv, err = start(vars)
	if err != nil {
		return err
	}
	defer func() { srv.stop() }()
	if err := waitHead(ctx, ch, st, 10*time.Minute); err != nil {
		return err
	}
	took := time.Since(t1)
	if c, err = newClient(srv.api, key); err != nil {
		return err
	}
	found, err := st.ChainTransfers(ctx, false, 10*transfers)
	if err != nil {
		return err
	}
	n := head - cur.Block
	fmt.Printf("backlog: %d blocks (%d → %d) with %d deposits and %d transfers to unknown addresses, scanned in %s: %.0f blocks/s; %d deposits recorded\n",
		n, cur.Block, head, k, k, took.Round(time.Millisecond), float64(n)/took.Seconds(), len(found))

	// 4. Detection delay.
	var delays []time.Duration
	unpaid := perm[transfers:]
	for i := 0; i < samples && i < len(unpaid); i++ {
		time.Sleep(time.Duration(rand.Int64N(int64(poll))))
		tx := txs[unpaid[i]]
		if _, err := ch.Transfer(ctx, token, common.HexToAddress(tx.DepositAddress), units(tx.CryptoAmount)); err != nil {
			return err
		}
		ch.Backend.Commit()
		mined := time.Now()
		for {
			res, err := c.GetTransactionWithResponse(ctx, tx.Id)
			if err != nil {
				return err
			}
			if res.JSON200 != nil && res.JSON200.Data.Status == client.TransactionStatusDepositConfirming {
				break
			}
			if time.Since(mined) > time.Minute {
				return errors.New("a deposit was not detected within a minute")
			}
			time.Sleep(5 * time.Millisecond)
		}
		delays = append(delays, time.Since(mined))
	}
	slices.Sort(delays)
	q := func(p float64) time.Duration { return delays[int(p*float64(len(delays)-1))].Round(time.Millisecond) }
	fmt.Printf("detection delay (block mined → deposit_confirming), %d samples, CHAIN_POLL_INTERVAL=%s: p50 %s, p90 %s, max %s\n",
		len(delays), poll, q(0.5), q(0.9), delays[len(delays)-1].Round(time.Millisecond))
	return nil
}

// startWithPartner starts the service with vars and creates the partner the
// benchmark creates transactions as, with its client; the server is stopped when
// either fails.
func startWithPartner(ctx context.Context, vars map[string]string) (*server, *client.ClientWithResponses, error) {
	srv, err := start(vars)
	if err != nil {
		return nil, nil, err
	}
	_, key, err := srv.app.Partners().CreateAlone(ctx, "bench")
	if err != nil {
		srv.stop()
		return nil, nil, err
	}
	c, err := newClient(srv.api, key)
	if err != nil {
		srv.stop()
		return nil, nil, err
	}
	return srv, c, nil
}

func newClient(api, key string) (*client.ClientWithResponses, error) {
	return client.NewClientWithResponses(api, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("X-API-KEY", key)
		return nil
	}))
}

func units(amount string) *big.Int {
	v, err := devnet.Units(amount, 18)
	if err != nil {
		panic(err)
	}
	return v
}

func cryptoRand(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(rand.UintN(256))
	}
	return len(b), nil
}

// waitHead waits until the scanner's cursor reaches the chain's head.
func waitHead(ctx context.Context, ch *devnet.Chain, st *store.Store, limit time.Duration) error {
	head, err := ch.Backend.Client().BlockNumber(ctx)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		cur, err := st.ChainCursor(ctx, chain.BEP20)
		if err != nil {
			return err
		}
		if cur != nil && cur.Block >= head {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("the scanner did not reach block %d within %s", head, limit)
}

// freshSchema creates a schema on the server and returns a URL using it.
func freshSchema(server string) (string, func(), error) {
	db, err := sql.Open("pgx", server)
	if err != nil {
		return "", nil, err
	}
	b := make([]byte, 6)
	_, _ = cryptoRand(b)
	schema := "bench_chain_" + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
		_ = db.Close()
	}, nil
}

func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
