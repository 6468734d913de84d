// Command benchapi drives one partner API operation with load and prints its
// throughput and latency as one JSON line. scripts/bench.sh runs it.
//
// Closed loop (-rate 0): -clients workers each send the next request as soon as
// the last is answered, for -duration: the throughput the server sustains. Open
// loop (-rate R): requests start at R per second whatever the answers, so the
// latency is measured at a known load (no coordinated omission).
//
// Operations: create (POST /transactions, direct mode, a fresh reference and
// Idempotency-Key each), get (GET /transactions/{id} over ids created first),
// quote (POST /quotes), list (GET /transactions?limit=20).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:8080", "server address")
	key := flag.String("key", "", "partner API key")
	op := flag.String("op", "create", "create, get, quote or list")
	clients := flag.Int("clients", 16, "concurrent requests (closed loop) or at most in flight (open loop)")
	duration := flag.Duration("duration", 10*time.Second, "how long to send")
	rate := flag.Float64("rate", 0, "requests per second (open loop); 0 for a closed loop")
	seed := flag.Int("seed", 200, "transactions created first for get")
	flag.Parse()
	if *key == "" {
		log.Fatal("benchapi: -key is required")
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *clients * 2, MaxConnsPerHost: *clients * 2}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	api := *base + "/api/v1/partner"

	var ids []string
	if *op == "get" {
		for range *seed {
			id, err := create(c, api, *key)
			if err != nil {
				log.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	var n atomic.Int64
	request := func() error {
		i := n.Add(1)
		switch *op {
		case "create":
			_, err := create(c, api, *key)
			return err
		case "get":
			return do(c, http.MethodGet, api+"/transactions/"+ids[int(i)%len(ids)], *key, nil, "", http.StatusOK, nil)
		case "quote":
			return do(c, http.MethodPost, api+"/quotes", *key,
				[]byte(`{"crypto_currency":"usdt","network":"bep20","crypto_amount":"25"}`), "", http.StatusCreated, nil)
		case "list":
			return do(c, http.MethodGet, api+"/transactions?limit=20", *key, nil, "", http.StatusOK, nil)
		}
		return fmt.Errorf("unknown op %q", *op)
	}

	var (
		mu     sync.Mutex
		lat    []time.Duration
		errs   int
		lastEr error
	)
	record := func(d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs++
			lastEr = err
			return
		}
		lat = append(lat, d)
	}
	start := time.Now()
	end := start.Add(*duration)
	var wg sync.WaitGroup
	if *rate <= 0 {
		for range *clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					t0 := time.Now()
					err := request()
					record(time.Since(t0), err)
				}
			}()
		}
	} else {
		slots := make(chan struct{}, *clients*8)
		interval := time.Duration(float64(time.Second) / *rate)
		for next := start; next.Before(end); next = next.Add(interval) {
			time.Sleep(time.Until(next))
			slots <- struct{}{}
			wg.Add(1)
			go func(due time.Time) {
				defer wg.Done()
				defer func() { <-slots }()
				err := request()
				record(time.Since(due), err) // from when it was due: queueing counts
			}(next)
		}
	}
	wg.Wait()
	took := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	out := map[string]any{
		"op": *op, "clients": *clients, "rate": *rate, "requests": len(lat), "errors": errs,
		"rps": float64(len(lat)) / took.Seconds(), "p50_ms": pct(0.50), "p90_ms": pct(0.90), "p99_ms": pct(0.99), "max_ms": pct(1),
	}
	if lastEr != nil {
		out["last_error"] = lastEr.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

func create(c *http.Client, api, key string) (string, error) {
	ref := uuid.NewString()
	body := []byte(`{"merchant_reference":"` + ref + `","crypto_currency":"usdt","network":"bep20","fiat_amount":"25000"}`)
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	err := do(c, http.MethodPost, api+"/transactions", key, body, ref, http.StatusCreated, &out)
	return out.Data.ID, err
}

func do(c *http.Client, method, url, key string, body []byte, idem string, want int, into any) error {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-API-KEY", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, b)
	}
	if into != nil {
		return json.Unmarshal(b, into)
	}
	return nil
}
