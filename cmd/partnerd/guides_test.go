package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// guideBlock is one shell block of a guide: its text and the kind its marker
// comment gives it (`<!-- guide-test: kind (why) -->` on the line before the
// opening fence), "" for a block the test runs as written.
type guideBlock struct {
	n    int // 1-based, counting every shell block of the file
	kind string
	text string
}

// Marker kinds: skip (cannot run in a test: says why), devchain (run by
// TestREADMEDevchainLoop), serve (starts the service: the test starts it with the
// block's VAR=value settings instead; one after blocks that ran restarts it with
// its own settings, as the reader stops and starts it), http-errors (shows a
// refusal: curl's HTTP errors do not fail it).
var guideBlockRe = regexp.MustCompile("(?s)(?:<!-- guide-test: ([a-z-]+)[^\n]*-->\n)?```sh\n(.*?)```")

// guideShellBlocks returns the shell blocks of the Markdown file at path, in order.
func guideShellBlocks(t *testing.T, path string) []guideBlock {
	t.Helper()
	md, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []guideBlock
	for i, m := range guideBlockRe.FindAllStringSubmatch(string(md), -1) {
		switch m[1] {
		case "", "skip", "devchain", "serve", "http-errors":
		default:
			t.Fatalf("%s: shell block %d: unknown marker guide-test: %s", path, i+1, m[1])
		}
		out = append(out, guideBlock{n: i + 1, kind: m[1], text: m[2]})
	}
	return out
}

// TestGuidesRunAsWritten runs the shell blocks of the README and of every guide
// (internal/contract/docs/guide/*.md) as a reader pastes them: each file's blocks in order in
// one bash session (so what a block sets, the next uses), in the repository's layout
// (bin/partnerd), against the built binary serving a fresh SQLite database in staging
// with WEBHOOK_ALLOW_PRIVATE_URLS=true, as make run does. The guides' addresses
// (localhost:8080, the listener's :9000) move to free ports. Under the test, curl
// fails on an HTTP error (a block marked http-errors shows one on purpose), and
// bash stops at the first failing command, naming the file and the block.
func TestGuidesRunAsWritten(t *testing.T) {
	t.Parallel()
	guides, err := filepath.Glob("../../internal/contract/docs/guide/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, guides)
	files := append([]string{"../../README.md"}, guides...)
	partnerd := buildBinary(t)
	for _, file := range files {
		blocks := guideShellBlocks(t, file)
		name := strings.TrimSuffix(filepath.Base(file), ".md")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runGuide(t, file, blocks, partnerd)
		})
	}
}

func runGuide(t *testing.T, file string, blocks []guideBlock, partnerd string) {
	var run []guideBlock
	var settings []string
	restarts := map[int][]string{} // a block's n → the settings the service restarts with before it
	var restart []string
	restarting := false
	for _, b := range blocks {
		switch b.kind {
		case "skip", "devchain":
			t.Logf("%s: shell block %d not run here (%s)", file, b.n, b.kind)
		case "serve":
			require.Contains(t, b.text, "bin/partnerd serve", "%s: block %d starts the service", file, b.n)
			s := regexp.MustCompile(`\b[A-Z_]+=\S+`).FindAllString(b.text, -1)
			if len(run) == 0 {
				settings = append(settings, s...)
			} else {
				restart, restarting = s, true
			}
		default:
			if restarting {
				restarts[b.n], restarting = restart, false
			}
			run = append(run, b)
		}
	}
	if len(run) == 0 {
		return
	}

	// The service, as make run (or the guide's serve block) starts it, in a
	// directory laid out like the repository: commands in the blocks reach the
	// same database (data/partnerd.db) through the same binary.
	work := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(work, "bin"), 0o755))
	require.NoError(t, os.Symlink(partnerd, filepath.Join(work, "bin", "partnerd")))
	listen := freePort(t)
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "DATABASE_URL" && k != "APP_ENV" && k != "LISTEN_ADDR" {
			env = append(env, kv)
		}
	}
	var serveOut syncBuffer
	var serve *exec.Cmd
	stop := func() {
		if serve == nil || serve.Process == nil {
			return
		}
		_ = serve.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = serve.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = serve.Process.Kill()
			<-done
		}
	}
	start := func(settings []string) error {
		serve = exec.Command(filepath.Join(work, "bin", "partnerd"), "serve")
		serve.Dir = work
		serve.Env = append(append(append([]string{}, env...), "WEBHOOK_ALLOW_PRIVATE_URLS=true"), settings...)
		serve.Env = append(serve.Env, "LISTEN_ADDR="+listen)
		serve.Stdout, serve.Stderr = &serveOut, &serveOut
		if err := serve.Start(); err != nil {
			return err
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if res, err := http.Get("http://" + listen + "/healthz"); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		return fmt.Errorf("the service did not answer:\n%s", serveOut.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("the service's output:\n%s", serveOut.String())
		}
	})
	require.NoError(t, start(settings))
	// A serve block after blocks that ran: the session asks for the restart here,
	// between its blocks (closed before the service stops, so none is under way).
	restarter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("block"))
		stop()
		if err := start(restarts[n]); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(restarter.Close)

	// One bash session for the file's blocks. ERR names the block that failed.
	_, hookPort, err := net.SplitHostPort(freePort(t))
	require.NoError(t, err)
	const strict = `curl() { command curl --fail-with-body "$@"; }`
	var script strings.Builder
	script.WriteString("set -eEuo pipefail\nshopt -s inherit_errexit\n")
	script.WriteString(`trap 'echo "guide-test: block $__block failed (exit $?) at: $BASH_COMMAND" >&2' ERR` + "\n")
	for _, b := range run {
		text := strings.ReplaceAll(b.text, "localhost:8080", listen)
		text = strings.ReplaceAll(text, ":9000", ":"+hookPort)
		fmt.Fprintf(&script, "__block=%d\n", b.n)
		if _, ok := restarts[b.n]; ok {
			fmt.Fprintf(&script, "command curl -sS --fail-with-body -X POST '%s/?block=%d'\n", restarter.URL, b.n)
		}
		if b.kind == "http-errors" {
			script.WriteString("unset -f curl\n")
		} else {
			script.WriteString(strict + "\n")
		}
		script.WriteString(text + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bash := exec.CommandContext(ctx, "bash", "-c", script.String())
	bash.Dir = work
	bash.Env = append(env, "PATH="+os.Getenv("PATH"))
	bash.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A block's background jobs (the webhook listener) die with the session.
	bash.Cancel = func() error { return syscall.Kill(-bash.Process.Pid, syscall.SIGKILL) }
	// A background job left running when a block fails keeps the output open:
	// stop reading shortly after bash ends.
	bash.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	bash.Stdout, bash.Stderr = &stdout, &stderr
	err = bash.Run()
	_ = syscall.Kill(-bash.Process.Pid, syscall.SIGKILL)
	if err == nil {
		return
	}
	failed := "?"
	if m := regexp.MustCompile(`guide-test: block (\d+) failed`).FindStringSubmatch(stderr.String()); m != nil {
		failed = m[1]
		n, _ := strconv.Atoi(m[1])
		for _, b := range run {
			if b.n == n {
				failed += ":\n" + b.text
			}
		}
	}
	tail := stdout.String()
	if len(tail) > 4000 {
		tail = "…" + tail[len(tail)-4000:]
	}
	t.Fatalf("%s: shell block %s\nfailed: %v (context: %v)\nstderr:\n%s\nstdout (end):\n%s", file, failed, err, ctx.Err(), stderr.String(), tail)
}
