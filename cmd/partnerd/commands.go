package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"partnerd/internal/config"
)

// invocation is what a command runs with: the log (its level chosen by run) and
// where its result and its messages go.
type invocation struct {
	log            *slog.Logger
	stdout, stderr io.Writer
}

// command is one command of the binary. Its usage (the general list and its
// own, with its flags) is built from these fields, so the list and each
// command's usage say the same.
type command struct {
	// name is its words, e.g. "partners keys roll".
	name string
	// synopsis is what follows the name, e.g. "--partner ID --key KEY_ID [--json]".
	synopsis string
	// about says what it does, one line each.
	about []string
	// settings is true for the commands that read the service's settings: they
	// warn about variables spelt almost like one.
	settings bool
	run      func(in invocation, args []string) error
}

// commands are every command, in the order the usage lists them.
var commands []command

func init() {
	commands = []command{
		{name: "serve", about: []string{"run the API (the default command)"}, settings: true,
			run: func(in invocation, args []string) error {
				if err := parse(newFlags("serve", in.stderr), args, 0); err != nil {
					return err
				}
				return serve(in.log, in.stdout)
			}},
		{name: "migrate", about: []string{"apply database migrations"}, settings: true,
			run: func(in invocation, args []string) error {
				if err := parse(newFlags("migrate", in.stderr), args, 0); err != nil {
					return err
				}
				return migrate(in.stdout)
			}},
		{name: "partners create", synopsis: "--name NAME [--json]", about: []string{"create a partner and print its API key once"}, settings: true,
			run: func(in invocation, args []string) error { return createPartner(args, in.log, in.stdout, in.stderr) }},
		{name: "partners keys roll", synopsis: "--partner ID --key KEY_ID [--overlap 24h] [--json]",
			about: []string{"replace a partner key; the old one works for the overlap"}, settings: true,
			run: func(in invocation, args []string) error {
				return partnerKeys("roll", args, in.log, in.stdout, in.stderr)
			}},
		{name: "partners keys revoke", synopsis: "--partner ID --key KEY_ID", about: []string{"revoke a partner key"}, settings: true,
			run: func(in invocation, args []string) error {
				return partnerKeys("revoke", args, in.log, in.stdout, in.stderr)
			}},
		{name: "partners users invite", synopsis: "--partner ID --email E --role admin|developer|finance [--base-url URL] [--json]",
			about: []string{"invite a person to the partner's dashboard; the link (on PUBLIC_URL, 72 h) is printed once;",
				"inviting someone still invited replaces their earlier link"}, settings: true,
			run: func(in invocation, args []string) error { return partnerUsers(args, in.log, in.stdout, in.stderr) }},
		{name: "operators create", synopsis: "--name NAME --role ROLE[,ROLE…] [--json]",
			about: []string{"create an operator (roles: viewer, support, treasury, compliance, admin)", "and print its API key once"}, settings: true,
			run: func(in invocation, args []string) error { return createOperator(args, in.log, in.stdout, in.stderr) }},
		{name: "operators roles", synopsis: "OPERATOR_ID --set ROLE[,ROLE…]", about: []string{"replace an operator's roles"}, settings: true,
			run: func(in invocation, args []string) error { return setOperatorRoles(args, in.log, in.stdout, in.stderr) }},
		{name: "listen", synopsis: "--secret whsec_… [--addr :9000]", about: []string{"receive, verify and print webhooks locally"},
			run: func(in invocation, args []string) error { return listen(args, in.stdout, in.stderr) }},
		{name: "deposits list", synopsis: "[--unmatched] [--json]", about: []string{"chain transfers to deposit addresses (unmatched ones for operators)"}, settings: true,
			run: func(in invocation, args []string) error { return listDeposits(args, in.stdout, in.stderr) }},
		{name: "addresses export", synopsis: "--network N [--json] [--account-path P]",
			about: []string{"every issued deposit address: index, derivation path, transaction, status, amount received"}, settings: true,
			run: func(in invocation, args []string) error { return exportAddresses(args, in.stdout, in.stderr) }},
		{name: "screening import", synopsis: "--source NAME --published YYYY-MM-DD FILE [--json]",
			about: []string{"import an address list (one address per line) to screen deposit senders against;", "waiting transactions are screened again"}, settings: true,
			run: func(in invocation, args []string) error { return importScreeningList(args, in.stdout, in.stderr) }},
		{name: "secrets rotate", about: []string{"seal every TOTP and webhook signing secret again under SECRETS_KEYS' first key"}, settings: true,
			run: func(in invocation, args []string) error {
				if err := parse(newFlags("secrets rotate", in.stderr), args, 0); err != nil {
					return err
				}
				return rotateSecrets(in.stdout)
			}},
		{name: "conformance", synopsis: "--base-url URL --api-key KEY [--operator-key KEY] [--include-webhooks] [--rotate-webhook-secret] [--json]",
			about: []string{"exercise every operation of both contracts against a running deployment", "and check every answer; fails on any violation"},
			run:   func(in invocation, args []string) error { return checkConformance(args, in.stdout, in.stderr) }},
		{name: "version", about: []string{"print the version, the commit and the Go it was built from"},
			run: func(in invocation, args []string) error {
				if err := parse(newFlags("version", in.stderr), args, 0); err != nil {
					return err
				}
				printVersion(in.stdout)
				return nil
			}},
		{name: "help", synopsis: "[COMMAND]", about: []string{"list the commands, or show one command's usage and flags"},
			run: help},
	}
}

// usageHeader starts the general usage.
const usageHeader = "usage: partnerd [-v] COMMAND (-v: show a command's log lines, not only its result and errors)"

// usageLines are the usage lines of cmds, as the general usage lists them.
func usageLines(cmds []command) string {
	var b strings.Builder
	for _, c := range cmds {
		line := "  partnerd " + strings.TrimSpace(displayName(c.name)+" "+c.synopsis)
		about := c.about
		if len(line) < 48 && len(about) > 0 {
			line += strings.Repeat(" ", 48-len(line)) + about[0]
			about = about[1:]
		}
		b.WriteString(line + "\n")
		for _, a := range about {
			b.WriteString(strings.Repeat(" ", 48) + a + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// displayName shows serve as optional: it is the default command.
func displayName(name string) string {
	if name == "serve" {
		return "[serve]"
	}
	return name
}

// usage is the general usage: every command.
func usage() string { return usageHeader + "\n" + usageLines(commands) }

// find returns the command named by the longest run of args' first words and
// the arguments after them, or false.
func find(args []string) (command, []string, bool) {
	best, n := command{}, 0
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(words) > n && len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			best, n = c, len(words)
		}
	}
	return best, args[n:], n > 0
}

// group returns the commands whose names start with the longest run of args'
// first words that begins some command's name (a group such as "partners
// keys"), and that run of words.
func group(args []string) ([]command, string) {
	for n := len(args); n > 0; n-- {
		prefix := strings.Join(args[:n], " ") + " "
		var in []command
		for _, c := range commands {
			if strings.HasPrefix(c.name, prefix) {
				in = append(in, c)
			}
		}
		if len(in) > 0 {
			return in, strings.TrimSpace(prefix)
		}
	}
	return nil, ""
}

// usageError is a command line the binary does not understand: the usage of
// the command it concerns is already on stderr; main adds the problem and exits
// with status 2, as the flag package does.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// errHelp is returned by parse after a command's usage was printed on request
// (-h, --help): nothing else runs, and the command succeeds.
var errHelp = flag.ErrHelp

// unknown refuses args that name no command: with the usage of the group they
// start (partners, partners keys, …) or else the general usage.
func unknown(args []string, stderr io.Writer) error {
	if in, prefix := group(args); in != nil {
		fmt.Fprintf(stderr, "usage:\n%s\n", usageLines(in))
		if n := len(strings.Fields(prefix)); n < len(args) {
			return usageError{fmt.Errorf("unknown command %q", prefix+" "+args[n])}
		}
		return usageError{fmt.Errorf("%s: which one? (see the usage above)", prefix)}
	}
	fmt.Fprintln(stderr, usage())
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

// newFlags returns the flag set of command name: its problems and its usage
// (the command's usage line, what it does, and its flags) are written on out.
func newFlags(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { commandUsage(fs.Output(), name, fs) }
	return fs
}

// commandUsage writes the usage of command name with fs's flags.
func commandUsage(w io.Writer, name string, fs *flag.FlagSet) {
	c, _, _ := find(strings.Fields(name))
	fmt.Fprintf(w, "usage: partnerd %s\n", strings.TrimSpace(displayName(c.name)+" "+c.synopsis))
	for _, a := range c.about {
		fmt.Fprintf(w, "  %s\n", a)
	}
	has := false
	fs.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprintln(w, "flags:")
		fs.PrintDefaults()
	}
}

// parse parses args with fs and refuses what fs does not define, an unknown
// flag (the flag package names it) or more than positional arguments, with
// the command's usage: a flag misspelt must not be ignored (serve --port 1
// would serve on another port than asked). -h and --help print the usage and
// return errHelp.
func parse(fs *flag.FlagSet, args []string, positional int) error {
	// The flag package writes its error and then the usage; the usage is written
	// here and the error by main, last, where it is seen.
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return errHelp
	case err != nil:
		fs.Usage()
		return usageError{fmt.Errorf("%s: %w", fs.Name(), err)}
	case fs.NArg() > positional:
		fs.Usage()
		return usageError{fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(positional))}
	}
	return nil
}

// help prints the general usage, or a command's usage and flags (its own -h),
// or a group's commands, on stdout.
func help(in invocation, args []string) error {
	fs := newFlags("help", in.stderr)
	if err := parse(fs, args, len(args)); err != nil {
		return err
	}
	args = fs.Args()
	if len(args) == 0 {
		fmt.Fprintln(in.stdout, usage())
		return nil
	}
	if c, rest, ok := find(args); ok && len(rest) == 0 {
		if c.name == "help" {
			commandUsage(in.stdout, c.name, flag.NewFlagSet(c.name, flag.ContinueOnError))
			return nil
		}
		// Every command parses its flags before anything else, so -h prints its
		// usage and does nothing more.
		err := c.run(invocation{log: in.log, stdout: in.stdout, stderr: in.stdout}, []string{"-h"})
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if in2, prefix := group(args); in2 != nil && prefix == strings.Join(args, " ") {
		fmt.Fprintf(in.stdout, "usage:\n%s\n", usageLines(in2))
		return nil
	}
	return unknown(args, in.stderr)
}

// version is the release this binary is, set when it is built for one
// (go build -ldflags "-X main.version=v1.2.3"); unset, the module version Go
// derives from the checkout is shown.
var version string

// printVersion prints the version and what it was built from: the commit
// (and whether the checkout had changes), its time, and the Go release, so a
// report from a running instance says which code it is.
func printVersion(w io.Writer) {
	v, rev, at, modified := version, "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(w, "partnerd %s\n", v)
	if rev != "" {
		changes := ""
		if modified {
			changes = " (with uncommitted changes)"
		}
		fmt.Fprintf(w, "commit   %s%s\n", rev, changes)
		if at != "" {
			fmt.Fprintf(w, "time     %s\n", at)
		}
	}
	fmt.Fprintf(w, "go       %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// ownVariables are the variables the binary reads besides the service's
// settings (the conformance check's keys).
var ownVariables = []string{"PARTNERD_API_KEY", "PARTNERD_OPERATOR_KEY"}

// warnNearMisses logs a warning for each environment variable spelt almost like
// a setting (LIQUIDTY for LIQUIDITY): unknown variables are otherwise ignored,
// and the setting's default silently used instead of what was meant.
func warnNearMisses(log *slog.Logger) {
	names := append(config.Names(os.Getenv), ownVariables...)
	for _, m := range config.NearMisses(os.Environ(), names) {
		log.Warn(fmt.Sprintf("%s is not a setting, and is ignored: did you mean %s?", m.Variable, m.Setting),
			"variable", m.Variable, "setting", m.Setting)
	}
}
