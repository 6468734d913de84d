// Command benchwebhooks is the load driver and webhook receiver of
// scripts/bench-webhooks.sh. It
//
//  1. listens on 127.0.0.1 (a free port) as the webhook receiver: it answers 200 to
//     every POST and records its webhook-id, arrival time and the body's created_at,
//     checks the signature, and counts duplicates, including ones that arrive while
//     a delivery of the same id is still in progress (concurrent duplicates);
//  2. registers the receiver with PUT /api/v1/partner/webhooks/endpoint;
//  3. creates transactions at -rate per second for at most -duration (and at most
//     -rate × -duration requests), round-robin over the -api base URLs, with at
//     most -concurrency requests in flight; each create emits one
//     transaction.created event;
//  4. waits (at most -wait) until every created transaction's event has arrived,
//     then prints the results.
//
// Delay is arrival at the receiver minus the event's created_at, the time of the
// state change, standing in for its commit. The service takes that time when the
// creating database transaction begins, before the transaction waits for locks
// (every create of one network updates the same address_counters row), so under
// contention it is earlier than the commit and this delay is an upper bound. The
// "201→receiver" delay is arrival minus the moment the driver got the create's
// response, which comes after the commit: a lower bound.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"partnerd/internal/webhook/sign"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchwebhooks:", err)
		os.Exit(1)
	}
}

type options struct {
	apis        []string
	key         string
	rate        float64
	duration    time.Duration
	concurrency int
	wait        time.Duration
	hold        time.Duration
	label       string
	drain       int    // drain mode: events to pre-create (0: the rate mode)
	db          string // drain mode: the benchmark database
}

func run() error {
	var o options
	apis := flag.String("api", "", "comma-separated base URLs of the instances, e.g. http://127.0.0.1:8081,http://127.0.0.1:8082")
	flag.StringVar(&o.key, "key", "", "the partner's API key")
	flag.Float64Var(&o.rate, "rate", 200, "target creates (events) per second")
	flag.DurationVar(&o.duration, "duration", 25*time.Second, "how long to generate load")
	flag.IntVar(&o.concurrency, "concurrency", 64, "maximum creates in flight")
	flag.DurationVar(&o.wait, "wait", 60*time.Second, "how long to wait for the remaining deliveries after the load")
	flag.DurationVar(&o.hold, "hold", 0, "how long the receiver holds each request before answering (widens the window in which a concurrent duplicate is seen)")
	flag.StringVar(&o.label, "label", "", "a label printed with the results")
	flag.IntVar(&o.drain, "drain", 0, "drain mode: insert this many pending events while the endpoint is disabled, enable it, and measure how fast they are delivered")
	flag.StringVar(&o.db, "db", "", "drain mode: the PostgreSQL URL of the benchmark database")
	flag.Parse()
	for _, a := range strings.Split(*apis, ",") {
		if a = strings.TrimRight(strings.TrimSpace(a), "/"); a != "" {
			o.apis = append(o.apis, a)
		}
	}
	if len(o.apis) == 0 || o.key == "" || o.rate <= 0 || o.duration <= 0 || o.concurrency <= 0 {
		return errors.New("-api, -key, a positive -rate, -duration and -concurrency are required")
	}
	for _, a := range o.apis {
		if !strings.HasPrefix(a, "http://127.0.0.1:") {
			return fmt.Errorf("-api %s: only http://127.0.0.1:PORT is allowed", a)
		}
	}

	rcv := newReceiver(o.hold)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rcv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()

	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        2 * o.concurrency,
			MaxIdleConnsPerHost: o.concurrency,
			IdleConnTimeout:     time.Minute,
		},
	}
	if o.drain > 0 {
		return runDrain(client, rcv, "http://"+ln.Addr().String()+"/", o)
	}
	secret, err := register(client, o.apis[0], o.key, "http://"+ln.Addr().String()+"/", true)
	if err != nil {
		return err
	}
	rcv.setSecret(secret)

	cpu0 := cpuTime()
	ld := &load{failed: map[string]int{}}
	stopSampling := ld.sampleBacklog(rcv)
	ld.drive(client, o)
	waitStart := time.Now()
	waitDeadline := waitStart.Add(o.wait)
	for time.Now().Before(waitDeadline) && rcv.pendingOf(ld.txIDs()) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	stopSampling()
	report(o, ld, rcv, time.Since(waitStart), cpuTime()-cpu0)
	return nil
}

// register puts the receiver as the partner's endpoint and returns the signing
// secret (present on first registration only).
func register(client *http.Client, api, key, url string, enabled bool) (string, error) {
	body, _ := json.Marshal(map[string]any{"url": url, "enabled": enabled})
	req, err := http.NewRequest(http.MethodPut, api+"/api/v1/partner/webhooks/endpoint", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("X-API-KEY", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("register endpoint: %w", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("register endpoint: HTTP %d: %s", res.StatusCode, b)
	}
	var out struct {
		Data struct {
			SigningSecret string `json:"signing_secret"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("register endpoint: %w", err)
	}
	return out.Data.SigningSecret, nil
}

// ---- receiver ----

type arrival struct {
	at        time.Time
	createdAt time.Time
	txID      string
	eventType string
}

type receiver struct {
	hold time.Duration

	mu            sync.Mutex
	secret        string
	first         map[string]arrival // webhook-id → first arrival
	byTx          map[string]string  // transaction id → webhook-id (transaction.created only)
	inFlight      map[string]int
	requests      int
	duplicates    int
	concurrentDup int
	maxInFlight   int
	curInFlight   int
	badSignature  int
	badBody       int
	otherTypes    int
}

func newReceiver(hold time.Duration) *receiver {
	return &receiver{hold: hold, first: map[string]arrival{}, byTx: map[string]string{}, inFlight: map[string]int{}}
}

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	r.secret = s
	r.mu.Unlock()
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	id := req.Header.Get(sign.HeaderID)

	var p struct {
		ID        string    `json:"id"`
		Type      string    `json:"type"`
		CreatedAt time.Time `json:"created_at"`
		Data      struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	parseErr := json.Unmarshal(body, &p)

	r.mu.Lock()
	secret := r.secret
	r.requests++
	r.curInFlight++
	r.maxInFlight = max(r.maxInFlight, r.curInFlight)
	if r.inFlight[id] > 0 {
		r.concurrentDup++
	}
	r.inFlight[id]++
	if _, seen := r.first[id]; seen {
		r.duplicates++
	} else {
		r.first[id] = arrival{at: at, createdAt: p.CreatedAt, txID: p.Data.ID, eventType: p.Type}
		if p.Type == "transaction.created" {
			r.byTx[p.Data.ID] = id
		} else {
			r.otherTypes++
		}
	}
	if parseErr != nil || id == "" || p.ID != id {
		r.badBody++
	}
	r.mu.Unlock()

	// The secret arrives with the registration's answer; a delivery racing it is
	// not checked.
	if secret != "" {
		if err := sign.Verify(secret, req.Header, body, time.Now(), 0); err != nil {
			r.mu.Lock()
			r.badSignature++
			r.mu.Unlock()
		}
	}
	if r.hold > 0 {
		time.Sleep(r.hold)
	}
	w.WriteHeader(http.StatusOK)

	r.mu.Lock()
	r.inFlight[id]--
	if r.inFlight[id] == 0 {
		delete(r.inFlight, id)
	}
	r.curInFlight--
	r.mu.Unlock()
}

// pendingOf counts the transactions of ids whose created event has not arrived.
func (r *receiver) pendingOf(ids []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := r.byTx[id]; !ok {
			n++
		}
	}
	return n
}

// ---- load driver ----

type created struct {
	txID     string
	sentAt   time.Time
	answerAt time.Time
}

type load struct {
	mu        sync.Mutex
	ok        []created
	failed    map[string]int // reason → count
	latencies []time.Duration
	scheduled int
	start     time.Time
	end       time.Time // the last create answered
	lateMax   time.Duration
	backlog   []int // created minus delivered, sampled every 100ms
}

func (l *load) txIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.ok))
	for i, c := range l.ok {
		out[i] = c.txID
	}
	return out
}

// sampleBacklog records, every 100ms until the returned function is called, how
// many created events have not arrived yet.
func (l *load) sampleBacklog(rcv *receiver) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				l.mu.Lock()
				n := len(l.ok)
				l.mu.Unlock()
				rcv.mu.Lock()
				d := len(rcv.byTx)
				rcv.mu.Unlock()
				l.mu.Lock()
				l.backlog = append(l.backlog, n-d)
				l.mu.Unlock()
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// drive creates transactions at o.rate for at most o.duration.
func (l *load) drive(client *http.Client, o options) {
	limit := int(o.rate * o.duration.Seconds())
	interval := time.Duration(float64(time.Second) / o.rate)
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	slots := make(chan int)
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range slots {
				l.create(client, o, i, run)
			}
		}()
	}

	l.start = time.Now()
	deadline := l.start.Add(o.duration)
	// Open loop: slot i is due at start + i×interval. When every worker is busy the
	// send waits, so the offered load falls short of the target; the shortfall is
	// reported.
	for i := 0; i < limit; i++ {
		due := l.start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if !time.Now().Before(deadline) {
			break
		}
		slots <- i
		if late := time.Since(due); late > l.lateMax {
			l.lateMax = late
		}
		l.scheduled++
	}
	close(slots)
	wg.Wait()
	l.end = time.Now()
}

func (l *load) create(client *http.Client, o options, i int, run string) {
	ref := fmt.Sprintf("BENCH-%s-%07d", run, i)
	body := fmt.Sprintf(`{"merchant_reference":%q,"crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}`, ref)
	req, err := http.NewRequest(http.MethodPost, o.apis[i%len(o.apis)]+"/api/v1/partner/transactions", strings.NewReader(body))
	if err != nil {
		l.fail("request: " + err.Error())
		return
	}
	req.Header.Set("X-API-KEY", o.key)
	req.Header.Set("Idempotency-Key", "bench-"+run+"-"+fmt.Sprint(i))
	req.Header.Set("Content-Type", "application/json")
	sent := time.Now()
	res, err := client.Do(req)
	if err != nil {
		l.fail("transport error")
		return
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	answered := time.Now()
	if res.StatusCode != http.StatusCreated {
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		l.fail(fmt.Sprintf("HTTP %d %s", res.StatusCode, e.Error.Code))
		return
	}
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Data.ID == "" {
		l.fail("201 without data.id")
		return
	}
	l.mu.Lock()
	l.ok = append(l.ok, created{txID: out.Data.ID, sentAt: sent, answerAt: answered})
	l.latencies = append(l.latencies, answered.Sub(sent))
	l.mu.Unlock()
}

func (l *load) fail(reason string) {
	l.mu.Lock()
	l.failed[reason]++
	l.mu.Unlock()
}

// ---- report ----

func report(o options, l *load, r *receiver, waited time.Duration, cpu time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()

	var delays, afterAnswer []time.Duration
	var firstArrival, lastArrival time.Time
	delivered := 0
	for _, c := range l.ok {
		wid, ok := r.byTx[c.txID]
		if !ok {
			continue
		}
		a := r.first[wid]
		delivered++
		delays = append(delays, a.at.Sub(a.createdAt))
		afterAnswer = append(afterAnswer, a.at.Sub(c.answerAt))
		if firstArrival.IsZero() || a.at.Before(firstArrival) {
			firstArrival = a.at
		}
		if a.at.After(lastArrival) {
			lastArrival = a.at
		}
	}
	unknown := len(r.byTx) - delivered // created events of transactions the driver did not see succeed

	failed := 0
	for _, n := range l.failed {
		failed += n
	}
	loadSecs := l.end.Sub(l.start).Seconds()
	title := "webhook delivery benchmark"
	if o.label != "" {
		title += " (" + o.label + ")"
	}
	fmt.Printf("== %s ==\n", title)
	fmt.Printf("instances                 %d (%s)\n", len(o.apis), strings.Join(o.apis, ", "))
	fmt.Printf("target load               %.0f events/s for %s, at most %d in flight\n", o.rate, o.duration, o.concurrency)
	fmt.Printf("creates attempted         %d in %.2fs (%.1f/s offered; worst start %s behind schedule)\n",
		l.scheduled, loadSecs, float64(l.scheduled)/loadSecs, l.lateMax.Round(time.Millisecond))
	fmt.Printf("events sent               %d (%.1f/s sustained by the API)\n", len(l.ok), float64(len(l.ok))/loadSecs)
	if failed > 0 {
		fmt.Printf("creates failed            %d %v\n", failed, l.failed)
	} else {
		fmt.Printf("creates failed            0\n")
	}
	slices.Sort(l.latencies)
	fmt.Printf("create latency            p50 %s  p99 %s  max %s\n", pct(l.latencies, 50), pct(l.latencies, 99), pct(l.latencies, 100))
	fmt.Printf("events delivered          %d of %d (missing %d; other arrivals %d; other event types %d)\n",
		delivered, len(l.ok), len(l.ok)-delivered, unknown, r.otherTypes)
	fmt.Printf("requests at receiver      %d (duplicates %d, concurrent duplicates %d, bad signatures %d, bad bodies %d, max in flight %d)\n",
		r.requests, r.duplicates, r.concurrentDup, r.badSignature, r.badBody, r.maxInFlight)
	if delivered > 0 {
		span := lastArrival.Sub(l.start).Seconds()
		arrSpan := lastArrival.Sub(firstArrival).Seconds()
		fmt.Printf("throughput                %.1f events/s (delivered ÷ first create to last arrival, %.2fs); %.1f events/s between first and last arrival\n",
			float64(delivered)/span, span, float64(delivered)/max(arrSpan, 1e-9))
		fmt.Printf("drain after load          last arrival %s after the last create answered (waited %s)\n",
			lastArrival.Sub(l.end).Round(time.Millisecond), waited.Round(time.Millisecond))
	}
	maxBacklog := 0
	for _, b := range l.backlog {
		maxBacklog = max(maxBacklog, b)
	}
	fmt.Printf("max backlog               %d events created but not yet delivered (sampled every 100ms)\n", maxBacklog)
	slices.Sort(delays)
	slices.Sort(afterAnswer)
	fmt.Printf("delay created_at→receiver p50 %s  p90 %s  p99 %s  max %s\n", pct(delays, 50), pct(delays, 90), pct(delays, 99), pct(delays, 100))
	fmt.Printf("delay 201→receiver        p50 %s  p90 %s  p99 %s  max %s\n", pct(afterAnswer, 50), pct(afterAnswer, 90), pct(afterAnswer, 99), pct(afterAnswer, 100))
	fmt.Printf("driver+receiver CPU       %.1fs\n", cpu.Seconds())
	// One machine-readable line for the script's summary table.
	fmt.Printf("RESULT sent=%d delivered=%d dup=%d concdup=%d badsig=%d offered=%.1f thr=%.1f p50=%s p90=%s p99=%s max=%s\n",
		len(l.ok), delivered, r.duplicates, r.concurrentDup, r.badSignature, float64(len(l.ok))/loadSecs,
		float64(delivered)/max(lastArrival.Sub(l.start).Seconds(), 1e-9),
		pct(delays, 50), pct(delays, 90), pct(delays, 99), pct(delays, 100))
}

// pct returns the p-th percentile (nearest rank) of sorted ds, in milliseconds.
func pct(ds []time.Duration, p float64) string {
	if len(ds) == 0 {
		return "n/a"
	}
	i := int(float64(len(ds))*p/100+0.999999) - 1
	i = min(max(i, 0), len(ds)-1)
	return fmt.Sprintf("%.1fms", float64(ds[i].Microseconds())/1000)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
