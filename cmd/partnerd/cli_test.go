package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// Every command refuses a flag it does not define, and an argument too many,
// with its own usage and a usage error, before doing anything: serve --port 1
// does not serve.
func TestCommandsRefuseUnknownFlags(t *testing.T) {
	t.Setenv("DATABASE_URL", "sqlite:"+filepath.Join(t.TempDir(), "p.db"))
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			args := append(strings.Fields(c.name), "--no-such-flag", "1")
			var out, errOut bytes.Buffer
			err := run(args, &out, &errOut)
			require.True(t, errors.As(err, new(usageError)), "%v", err)
			require.ErrorContains(t, err, "-no-such-flag")
			require.Contains(t, errOut.String(), "usage: partnerd "+displayName(c.name))
			require.Empty(t, out.String())
		})
	}
	for _, args := range [][]string{
		{"serve", "now"},
		{"migrate", "--all"},
		{"partners", "create", "--name", "Acme", "extra"},
		{"operators", "roles", uuid.NewString(), "--set", "viewer", "extra"},
		{"listen", "--secret"},
		{"version", "--short"},
	} {
		var errOut bytes.Buffer
		err := run(args, &bytes.Buffer{}, &errOut)
		require.True(t, errors.As(err, new(usageError)), "%v: %v", args, err)
		require.Contains(t, errOut.String(), "usage: partnerd "+displayName(strings.Join(args[:len(strings.Fields(commandOf(args)))], " ")), args)
	}

	// Required flags missing are refused with the usage too.
	var errOut bytes.Buffer
	err := run([]string{"operators", "create", "--name", "Ada"}, &bytes.Buffer{}, &errOut)
	require.True(t, errors.As(err, new(usageError)))
	require.Contains(t, errOut.String(), "-role")
}

// commandOf is the name of the command args run.
func commandOf(args []string) string {
	c, _, _ := find(args)
	return c.name
}

// An unknown command is refused with the usage of what it starts with: the
// group's commands, or every command.
func TestUnknownCommands(t *testing.T) {
	var errOut bytes.Buffer
	err := run([]string{"bogus"}, &bytes.Buffer{}, &errOut)
	require.True(t, errors.As(err, new(usageError)))
	require.EqualError(t, err, `unknown command "bogus"`)
	require.Contains(t, errOut.String(), "partnerd operators create")

	errOut.Reset()
	err = run([]string{"partners", "keys", "delete", "--partner", "x"}, &bytes.Buffer{}, &errOut)
	require.EqualError(t, err, `unknown command "partners keys delete"`)
	require.Contains(t, errOut.String(), "partnerd partners keys roll")
	require.Contains(t, errOut.String(), "partnerd partners keys revoke")
	require.NotContains(t, errOut.String(), "partners create", "the group's commands only")

	errOut.Reset()
	err = run([]string{"partners"}, &bytes.Buffer{}, &errOut)
	require.True(t, errors.As(err, new(usageError)))
	require.Contains(t, errOut.String(), "partnerd partners users invite")
}

// help lists the commands; help COMMAND shows that command's usage and flags on
// stdout, as COMMAND -h does (on stderr), and neither runs it.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"help"}, &out, &bytes.Buffer{}))
	for _, c := range commands {
		require.Contains(t, out.String(), "partnerd "+displayName(c.name))
	}
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		var again bytes.Buffer
		require.NoError(t, run(args, &again, &bytes.Buffer{}))
		require.Equal(t, out.String(), again.String())
	}

	out.Reset()
	require.NoError(t, run([]string{"help", "partners", "keys", "roll"}, &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "usage: partnerd partners keys roll --partner ID")
	require.Contains(t, out.String(), "-overlap duration")
	require.NotContains(t, out.String(), "revoke")

	out.Reset()
	require.NoError(t, run([]string{"help", "serve"}, &out, &bytes.Buffer{}))
	require.Equal(t, "usage: partnerd [serve]\n  run the API (the default command)\n", out.String())

	out.Reset()
	require.NoError(t, run([]string{"help", "operators"}, &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "partnerd operators create")
	require.Contains(t, out.String(), "partnerd operators roles")
	require.NotContains(t, out.String(), "partners")

	var errOut bytes.Buffer
	out.Reset()
	require.NoError(t, run([]string{"serve", "--help"}, &out, &errOut), "serve -h prints its usage and does not serve")
	require.Contains(t, errOut.String(), "usage: partnerd [serve]")
	require.NoError(t, run([]string{"help", "help"}, &out, &bytes.Buffer{}))

	err := run([]string{"help", "nothing"}, &bytes.Buffer{}, &bytes.Buffer{})
	require.True(t, errors.As(err, new(usageError)))
}

// version prints the version set at build time, else the module's, and the Go
// release.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"version"}, &out, &bytes.Buffer{}))
	require.Regexp(t, `^partnerd \S+\n(?s:.*)go +go1\.`, out.String())

	defer func(v string) { version = v }(version)
	version = "v1.2.3"
	out.Reset()
	require.NoError(t, run([]string{"--version"}, &out, &bytes.Buffer{}))
	require.True(t, strings.HasPrefix(out.String(), "partnerd v1.2.3\n"), out.String())
}

// A variable spelt almost like a setting is warned about, naming the setting,
// by every command that reads the settings; a setting spelt right is not.
func TestNearMissSettingsWarn(t *testing.T) {
	t.Setenv("DATABASE_URL", "sqlite:"+filepath.Join(t.TempDir(), "p.db"))
	t.Setenv("LIQUIDTY", "operator")
	var errOut bytes.Buffer
	require.NoError(t, run([]string{"migrate"}, &bytes.Buffer{}, &errOut))
	require.Contains(t, errOut.String(), `"level":"WARN"`)
	require.Contains(t, errOut.String(), `"msg":"LIQUIDTY is not a setting, and is ignored: did you mean LIQUIDITY?"`)

	os.Unsetenv("LIQUIDTY")
	t.Setenv("LIQUIDITY", "simulated")
	errOut.Reset()
	require.NoError(t, run([]string{"migrate"}, &bytes.Buffer{}, &errOut))
	require.NotContains(t, errOut.String(), "LIQUIDITY")

	errOut.Reset()
	t.Setenv("PARTNERD_API_KY", "sk_sandbox_x")
	require.NoError(t, run([]string{"help"}, &bytes.Buffer{}, &errOut))
	require.Empty(t, errOut.String(), "a command that reads no setting does not look")
}

// The binary: an unknown flag exits with status 2 and serve's usage; a
// misspelt setting is a WARN line when serving starts.
func TestBinaryRefusesAndWarns(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve", "--port", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode())
	require.Contains(t, stderr.String(), "usage: partnerd [serve]")
	require.Contains(t, stderr.String(), "partnerd: serve: flag provided but not defined: -port")

	srv, _ := startBinary(t, bin, []string{"DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "p.db"), "APP_ENV=staging", "LIQUIDTY=operator"})
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, <-srv.done)
	require.Regexp(t, `"level":"WARN","msg":"LIQUIDTY is not a setting, and is ignored: did you mean LIQUIDITY\?"`, srv.out.String())
}

// An invitation printed by the command line opens the dashboard's page that
// sets the password, on the service as it serves: the link starts with the
// listening address (PUBLIC_URL unset) or with PUBLIC_URL.
func TestInvitationLinkFromTheCommandLineOpens(t *testing.T) {
	bin := buildBinary(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	srv, _ := startBinary(t, bin, []string{"DATABASE_URL=" + db, "APP_ENV=staging"})
	t.Cleanup(func() { _ = srv.cmd.Process.Signal(syscall.SIGTERM); <-srv.done })
	t.Setenv("DATABASE_URL", db)
	t.Setenv("LISTEN_ADDR", strings.TrimPrefix(srv.base, "http://"))
	t.Setenv("PUBLIC_URL", "")

	var out bytes.Buffer
	require.NoError(t, run([]string{"partners", "create", "--name", "Acme Pay", "--json"}, &out, &bytes.Buffer{}))
	partner := regexp.MustCompile(`"partner_id":"([^"]+)"`).FindStringSubmatch(out.String())[1]
	invite := func(email string, extra ...string) string {
		t.Helper()
		out.Reset()
		require.NoError(t, run(append([]string{"partners", "users", "invite", "--partner", partner, "--email", email, "--role", "admin"}, extra...), &out, &bytes.Buffer{}))
		return out.String()
	}
	printed := invite("ada@acme.example")
	link := regexp.MustCompile(`invite_url: (\S+)`).FindStringSubmatch(printed)[1]
	require.True(t, strings.HasPrefix(link, srv.base+"/dashboard/invite/"), link)
	require.NotContains(t, printed, "already invited")

	res, err := http.Get(link)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.Contains(t, string(body), "Set your password")

	// Inviting her again says the first link stopped working, and the new one opens.
	again := invite("ada@acme.example")
	require.Contains(t, again, "ada@acme.example was already invited: the earlier link no longer works")
	res, err = http.Get(link)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.NotEqual(t, http.StatusOK, res.StatusCode, "the first link no longer works")
	res, err = http.Get(regexp.MustCompile(`invite_url: (\S+)`).FindStringSubmatch(again)[1])
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	t.Setenv("PUBLIC_URL", "https://partnerd.example.com/")
	require.Contains(t, invite("bob@acme.example"), "invite_url: https://partnerd.example.com/dashboard/invite/")
}

// The first Ctrl-C stops gracefully and says what it waits for; a second one,
// while a request still holds the stop up, exits at once with status 130.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	addr := freePort(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL=sqlite:"+filepath.Join(t.TempDir(), "p.db"), "APP_ENV=staging", "LISTEN_ADDR="+addr)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	key := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if k := regexp.MustCompile(`sk_sandbox_[A-Za-z0-9_-]+`).FindString(sc.Text()); k != "" {
			key = k
		}
		if strings.Contains(sc.Text(), "listening on") {
			break
		}
	}
	require.NotEmpty(t, key)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	exited := make(chan error, 1)

	// A request whose body never comes: the server asks for it (100 Continue)
	// once its handler reads it, and then waits.
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /api/v1/partner/transactions HTTP/1.1\r\nHost: "+addr+"\r\nX-API-KEY: "+key+
		"\r\nIdempotency-Key: "+uuid.NewString()+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", status, "the handler is reading the body")

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	waitLine(t, lines, `"msg":"received interrupt: stopping (Ctrl-C again to exit at once)"`)
	waitLine(t, lines, `"msg":"shutting down: no new requests; waiting for the requests in flight, then the running jobs","requests_in_flight":1`)

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	waitLine(t, lines, `"msg":"interrupted again: exiting now, without waiting"`)
	go func() { exited <- cmd.Wait() }()
	var exit *exec.ExitError
	require.ErrorAs(t, <-exited, &exit)
	require.Equal(t, 130, exit.ExitCode(), "a graceful stop cut short by its 20 s bound would exit 1")
}

// waitLine reads lines until one contains want; it fails if they end first.
func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	var seen []string
	for l := range lines {
		if strings.Contains(l, want) {
			return
		}
		seen = append(seen, l)
	}
	t.Fatalf("no line with %s; the lines:\n%s", want, strings.Join(seen, "\n"))
}

// The first make run says it is building (the first build takes minutes);
// later ones do not.
func TestMakeRunSaysBuilding(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	makefile, err := filepath.Abs("../../Makefile")
	require.NoError(t, err)
	dir := t.TempDir()
	// A go that "builds" a partnerd printing its arguments.
	fakeGo := filepath.Join(dir, "fake-go")
	require.NoError(t, os.WriteFile(fakeGo, []byte("#!/bin/sh\nmkdir -p bin\nprintf '#!/bin/sh\\necho partnerd \"$@\"\\n' > bin/partnerd\nchmod +x bin/partnerd\n"), 0o755))
	makeRun := func() string {
		cmd := exec.Command("make", "-s", "-f", makefile, "run", "GO="+fakeGo, "VERSION=test")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	first := makeRun()
	require.Contains(t, first, "building…")
	require.Contains(t, first, "partnerd serve")
	require.NotContains(t, makeRun(), "building…")
}
