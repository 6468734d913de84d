package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
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
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/testsupport/apitest"
)

// TestREADMEDevchainLoop runs the devchain loop of the chains guide
// (internal/contract/docs/guide/chains.md) as written, on both networks: the shell blocks
// marked `<!-- guide-test: devchain -->`, the first (make devchain) in the
// background, the second whole in one bash session. Built binaries stand in for
// make's build; the addresses move to free ports and NETWORK to the network under
// test. Each substitution must apply (the guide cannot drift from the test
// silently). The transaction must then reach the status the guide shows,
// read through the generated client (answers checked against the contract), with the
// sent transfer as its deposit; Ctrl-C stops the chain and the service.
func TestREADMEDevchainLoop(t *testing.T) {
	t.Parallel()
	blocks := readmeBlocks(t, "devchain")
	require.Len(t, blocks, 2, "the chains guide marks two devchain blocks: make devchain, and the payment")
	makefile, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	require.Contains(t, string(makefile), "scripts/devchain.sh $(NETWORK)", "make devchain runs the script the test runs")
	script, err := filepath.Abs("../../scripts/devchain.sh")
	require.NoError(t, err)
	partnerd, devchain := buildBinary(t), buildDevchain(t)
	for _, network := range []string{"bep20", "trc20"} {
		t.Run(network, func(t *testing.T) {
			t.Parallel()
			runDevchainLoop(t, blocks, network, script, partnerd, devchain)
		})
	}
}

func runDevchainLoop(t *testing.T, blocks []string, network, script, partnerd, devchain string) {
	work := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(work, "bin"), 0o755))
	require.NoError(t, os.Symlink(partnerd, filepath.Join(work, "bin", "partnerd")))
	require.NoError(t, os.Symlink(devchain, filepath.Join(work, "bin", "devchain")))
	listen, chainAddr := freePort(t), freePort(t)
	_, chainPort, err := net.SplitHostPort(chainAddr)
	require.NoError(t, err)
	env := append(os.Environ(), "LISTEN_ADDR="+listen, "DEVCHAIN_PORT="+chainPort)
	subs := &substitutions{t: t}

	// The first block: make devchain, as make runs it once built (the Makefile's
	// recipe, checked above), in its own process group as a terminal runs it.
	first := subs.apply(blocks[0], "make devchain", "make devchain NETWORK="+network, network != "bep20")
	shim := fmt.Sprintf(`make() { [ "$1" = devchain ] || { echo "the test runs only make devchain, not make $*" >&2; return 2; }; shift; env "$@" %q; }`, script)
	chain := exec.Command("bash", "-euo", "pipefail", "-c", shim+"\n"+first)
	chain.Dir, chain.Env = work, env
	chain.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := chain.StdoutPipe()
	require.NoError(t, err)
	var logs syncBuffer
	chain.Stderr = &logs
	require.NoError(t, chain.Start())
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = syscall.Kill(-chain.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("make devchain's logs:\n%s", logs.String())
		}
	})
	var printed syncBuffer
	keyRe := regexp.MustCompile(`sk_sandbox_[A-Za-z0-9_-]+`)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		key := ""
		for sc.Scan() {
			printed.Write([]byte(sc.Text() + "\n"))
			if k := keyRe.FindString(sc.Text()); k != "" {
				key = k
			}
			if strings.Contains(sc.Text(), "listening on") {
				ready <- key
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		exited <- chain.Wait()
	}()
	var key string
	select {
	case key = <-ready:
	case err := <-exited:
		t.Fatalf("make devchain stopped before the service listened: %v\n%s", err, printed.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("make devchain: no service within 30 s\n%s", printed.String())
	}
	require.NotEmpty(t, key, "make devchain prints the demo key:\n%s", printed.String())
	require.Contains(t, printed.String(), "CHAIN_RPC_"+strings.ToUpper(network)+"=http://127.0.0.1:"+chainPort, "devchain printed the settings the service runs with")

	// The second block, whole, in one bash session as a terminal runs it: the
	// answers it prints are read back (the created transaction, the sent transfer).
	second := subs.apply(blocks[1], "localhost:8080", listen, true)
	second = subs.apply(second, "NETWORK=bep20", "NETWORK="+network, true)
	// After the block, the test asks for the key it made (the transaction's partner's).
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", second+"\necho \"guide-test-key=$KEY\"\n")
	cmd.Dir, cmd.Env = work, env
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	require.NoError(t, err, "the guide's devchain block failed:\n%s%s", out, errOut.String())
	data := map[string]any{}
	var sent string
	for _, line := range strings.Split(string(out), "\n") {
		var answer struct {
			Data map[string]any `json:"data"`
		}
		if json.Unmarshal([]byte(line), &answer) == nil && answer.Data["deposit_address"] != nil && len(data) == 0 {
			data = answer.Data // the first answer: the created transaction
		}
		if k, ok := strings.CutPrefix(line, "guide-test-key="); ok {
			key = k
		}
		if m := regexp.MustCompile(`^sent .* tx (\S+) in block \d+`).FindStringSubmatch(line); m != nil {
			sent = m[1]
		}
	}
	require.NotEmpty(t, data, "the block prints the created transaction:\n%s", out)
	require.True(t, strings.HasPrefix(key, "sk_sandbox_"), "the block sets KEY to a sandbox key: %q", key)
	subs.allApplied()
	require.NotEmpty(t, sent, "the guide's block sends a deposit with devchain")
	require.Equal(t, network, data["network"])
	id, err := uuid.Parse(fmt.Sprint(data["id"]))
	require.NoError(t, err)
	want, err := decimal.NewFromString(fmt.Sprint(data["crypto_amount"]))
	require.NoError(t, err)

	// The transaction reaches the state the guide shows, read through the
	// generated client (each answer checked against the contract).
	c := apitest.Remote(t, "http://"+listen).Client(t, key)
	deadline := time.Now().Add(45 * time.Second)
	for {
		res, err := c.GetTransactionWithResponse(context.Background(), id)
		require.NoError(t, err)
		require.NotNil(t, res.JSON200, string(res.Body))
		tx := res.JSON200.Data
		if string(tx.Status) == "order_filled" {
			require.Equal(t, "confirmed", *tx.DepositStatus)
			require.Equal(t, sent, *tx.DepositTxHash, "the deposit is the transfer devchain sent")
			got, err := decimal.NewFromString(*tx.DepositAmount)
			require.NoError(t, err)
			require.True(t, want.Equal(got), "deposit %s, want %s", got, want)
			require.GreaterOrEqual(t, *tx.Confirmations, 3)
			break
		}
		require.Contains(t, []string{"awaiting_deposit", "deposit_confirming"}, string(tx.Status), "on the way to order_filled")
		require.True(t, time.Now().Before(deadline), "still %s after 45 s: %s", tx.Status, res.Body)
		time.Sleep(250 * time.Millisecond)
	}

	// Ctrl-C stops both: the terminal signals the whole process group.
	require.NoError(t, syscall.Kill(-chain.Process.Pid, syscall.SIGINT))
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("make devchain still running 20 s after Ctrl-C")
	}
	for _, addr := range []string{listen, chainAddr} {
		require.Eventually(t, func() bool {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
			}
			return err != nil
		}, 10*time.Second, 100*time.Millisecond, "%s still answers after Ctrl-C", addr)
	}
}

// devchainGuide is the guide whose devchain blocks this test runs.
const devchainGuide = "../../internal/contract/docs/guide/chains.md"

// readmeBlocks returns the chains guide's shell blocks marked
// `<!-- guide-test: name … -->` (the marker on the line before the block's opening
// fence), in order.
func readmeBlocks(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for _, b := range guideShellBlocks(t, devchainGuide) {
		if b.kind == name {
			out = append(out, b.text)
		}
	}
	return out
}

// substitutions applies the guide's placeholders and remembers each that must
// have matched.
type substitutions struct {
	t       *testing.T
	missing []string
}

// apply replaces old with new in block; when required, old must occur.
func (s *substitutions) apply(block, old, new string, required bool) string {
	if required && !strings.Contains(block, old) {
		s.missing = append(s.missing, old)
	}
	return strings.ReplaceAll(block, old, new)
}

func (s *substitutions) allApplied() {
	require.Empty(s.t, s.missing, "the chains guide's devchain blocks no longer contain these; update the guide or the test")
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	devchainOnce sync.Once
	devchainBin  string
	devchainErr  error
)

// buildDevchain builds cmd/devchain once per test run and returns its path.
func buildDevchain(t *testing.T) string {
	t.Helper()
	devchainOnce.Do(func() {
		dir, err := os.MkdirTemp("", "devchain-bin-")
		if err != nil {
			devchainErr = err
			return
		}
		devchainBin = filepath.Join(dir, "devchain")
		build := exec.Command("go", "build", "-ldflags=-w", "-o", devchainBin, "../devchain")
		build.Stderr = os.Stderr
		devchainErr = build.Run()
	})
	require.NoError(t, devchainErr)
	return devchainBin
}
