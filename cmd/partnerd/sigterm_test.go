package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// server is a running partnerd binary.
type server struct {
	cmd  *exec.Cmd
	base string
	out  *bytes.Buffer
	done chan error
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func startBinary(t *testing.T, bin string, env []string) (*server, string) {
	t.Helper()
	addr := freePort(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), append(env, "LISTEN_ADDR="+addr)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	s := &server{cmd: cmd, base: "http://" + addr, out: &logs, done: make(chan error, 1)}
	key := ""
	sc := bufio.NewScanner(stdout)
	keyRe := regexp.MustCompile(`sk_sandbox_[A-Za-z0-9_-]+`)
	for sc.Scan() {
		if k := keyRe.FindString(sc.Text()); k != "" {
			key = k
		}
		if strings.Contains(sc.Text(), "listening on") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return s, key
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildBinary builds partnerd once per test run and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "partnerd-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "partnerd")
		build := exec.Command("go", "build", "-ldflags=-w", "-o", builtBin, ".")
		build.Stderr = os.Stderr
		buildErr = build.Run()
	})
	require.NoError(t, buildErr)
	return builtBin
}

// A SIGTERM during load: requests the server accepted all get their answer, the
// process exits cleanly, and the expiry jobs of the transactions it created survive
// the restart and run.
func TestSIGTERMDuringLoad(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	env := []string{"DATABASE_URL=" + dbURL, "APP_ENV=staging", "DEPOSIT_WINDOW=3s", "EXPIRY_SWEEP_INTERVAL=1s", "JOB_POLL_INTERVAL=100ms"}

	srv, key := startBinary(t, bin, env)
	require.NotEmpty(t, key)
	// One connection per request: a request written to a kept-alive connection at
	// the instant the server closes it as idle was never accepted (HTTP/1.1 clients
	// retry those), and would blur what this test measures.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var (
		mu         sync.Mutex
		answered   int
		refused    int
		unanswered []string
		created    []string
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ref := fmt.Sprintf("SIG-%d-%d", w, i)
				body := fmt.Sprintf(`{"merchant_reference":"%s","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}`, ref)
				req, _ := http.NewRequest(http.MethodPost, srv.base+"/api/v1/partner/transactions", strings.NewReader(body))
				req.Header.Set("X-API-KEY", key)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", uuid.NewString())
				res, err := client.Do(req)
				mu.Lock()
				switch {
				case err == nil:
					answered++
					var out struct {
						Data struct{ ID string } `json:"data"`
					}
					if res.StatusCode == http.StatusCreated && json.NewDecoder(res.Body).Decode(&out) == nil {
						created = append(created, out.Data.ID)
					}
					_ = res.Body.Close()
				case errors.Is(err, syscall.ECONNREFUSED):
					refused++ // not accepted: the listener is closed
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					continue
				default:
					// The connection closed without an answer. Either the server never
					// took the request (a connection still in the kernel's accept
					// queue when the listener closed is reset), or it did and lost the
					// answer. Which one is told after the restart: a request the
					// server took has created its transaction.
					unanswered = append(unanswered, ref)
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-srv.done:
		require.NoError(t, err, "exits cleanly on SIGTERM; logs:\n%s", srv.out.String())
	case <-time.After(30 * time.Second):
		t.Fatal("did not stop within 30 s of SIGTERM")
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	require.Contains(t, srv.out.String(), `"msg":"request"`, "one JSON log line per request")
	require.NotContains(t, srv.out.String(), key, "the API key never reaches a log line")
	require.NotContains(t, srv.out.String(), key[len("sk_sandbox_"):])
	require.Positive(t, answered)
	require.NotEmpty(t, created)
	t.Logf("answered %d, refused after shutdown %d, unanswered %d, created %d", answered, refused, len(unanswered), len(created))

	// Restart on the same database: every transaction created before the SIGTERM
	// is expired by the expiry sweep, without any request.
	srv2, _ := startBinary(t, bin, env)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	for _, id := range created {
		for {
			status := statusOf(t, client, srv2.base, key, id)
			if status == "expired" {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("transaction %s still %s", id, status)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	// No request the first server took went unanswered: none of the unanswered
	// references exists.
	for _, ref := range unanswered {
		require.Equal(t, http.StatusNotFound, referenceStatus(t, client, srv2.base, key, ref),
			"request %s was executed but its answer was lost", ref)
	}
	require.NoError(t, srv2.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, <-srv2.done)
}

// statusOf reads a transaction's status through the API.
func statusOf(t *testing.T, c *http.Client, base, key, id string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/partner/transactions/"+id, nil)
	require.NoError(t, err)
	req.Header.Set("X-API-KEY", key)
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out struct {
		Data struct{ Status string } `json:"data"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return out.Data.Status
}

// referenceStatus returns the HTTP status of a lookup by merchant reference.
func referenceStatus(t *testing.T, c *http.Client, base, key, ref string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/partner/transactions/reference/"+ref, nil)
	require.NoError(t, err)
	req.Header.Set("X-API-KEY", key)
	res, err := c.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	return res.StatusCode
}
