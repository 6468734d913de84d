// Command partnerd runs the partner API.
//
//	partnerd [serve]                          run the API (the default)
//	partnerd migrate                          apply database migrations and exit
//	partnerd partners create --name NAME [--json]
//	                                          create a partner and print its API key once
//	partnerd partners keys roll --partner ID --key KEY_ID [--overlap 24h] [--json]
//	                                          replace a partner key (the old one works for the overlap)
//	partnerd partners keys revoke --partner ID --key KEY_ID
//	                                          revoke a partner key
//	partnerd partners users invite --partner ID --email E --role R [--base-url URL] [--json]
//	                                          invite a person to a partner's dashboard; print the link once
//	partnerd operators create --name NAME --role ROLES [--json]
//	                                          create a back-office operator and print its key once
//	partnerd operators roles ID --set ROLES   change an operator's roles
//	partnerd listen --secret whsec_… [--addr :9000]
//	                                          receive, verify and print webhooks locally
//	partnerd deposits list [--unmatched] [--json]
//	                                          chain transfers to deposit addresses
//	partnerd addresses export --network N [--json] [--account-path P]
//	                                          every issued deposit address with its derivation path
//	partnerd screening import --source NAME --published YYYY-MM-DD FILE [--json]
//	                                          an address list deposit senders are screened against
//	partnerd conformance --base-url URL --api-key KEY [--operator-key KEY] [--json]
//	                                          check a running deployment against its contracts
//	partnerd secrets rotate                   seal every stored secret again under the current key
//	partnerd version                          the version and the commit it was built from
//	partnerd help [COMMAND]                   the commands, or one command's usage and flags
//
// An unknown command, flag or argument is refused with the command's usage
// (exit status 2).
//
// Settings come from the environment; see internal/contract/docs/guide/configuration.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"partnerd/internal/app"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/config"
	"partnerd/internal/kit/uow"
	"partnerd/internal/listener"
	"partnerd/internal/store"
	"partnerd/internal/tracing"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "partnerd:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2) // the command line was not understood; its usage is above
		}
		os.Exit(1)
	}
}

// run runs the command args name (serve when there is none), writing its
// result on stdout and its log lines and messages on stderr. A command line it
// does not understand is a usageError; -h or --help after a command prints its
// usage and succeeds.
func run(args []string, stdout, stderr io.Writer) error {
	verbose := len(args) > 0 && args[0] == "-v"
	if verbose {
		args = args[1:]
	}
	switch {
	case len(args) == 0:
		args = []string{"serve"}
	case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		args = []string{"help"}
	case args[0] == "--version" || args[0] == "-version":
		args = []string{"version"}
	}
	c, rest, ok := find(args)
	if !ok {
		return unknown(args, stderr)
	}
	// A command other than serve prints its result alone: its start-up warnings
	// (demo keys, watchers off) belong to the service, so they show with -v only;
	// errors always do.
	level := slog.LevelInfo
	if c.name != "serve" && !verbose {
		level = slog.LevelError
	}
	// Lines logged with a context carrying a span get its trace_id and span_id.
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})))
	if c.settings {
		// A setting misspelt is about this command too (a DATABASE_URL misspelt
		// points it at another database), so every command that reads settings
		// shows the warning, whatever its log level.
		warnNearMisses(slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: min(level, slog.LevelWarn)})))
	}
	err := c.run(invocation{log: log, stdout: stdout, stderr: stderr}, rest)
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

func serve(log *slog.Logger, stdout io.Writer) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	ctx, stop := stopOnSignal(log)
	defer stop()
	// Bind first: a taken port must fail before anything is created, or the demo
	// partner's key (shown once) would be printed by a start that then fails.
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("LISTEN_ADDR %s: %w (is another partnerd running? set LISTEN_ADDR to another address)", cfg.ListenAddr, err)
	}
	defer ln.Close()
	release, err := app.LockServing(cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer release()
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	demo, key, err := a.EnsureDemoPartner(ctx)
	if err != nil {
		return err
	}
	if demo != nil {
		fmt.Fprintf(stdout, "\nCreated a demo partner, id %s. Its sandbox API key (shown only now):\n\n    %s\n\n", demo.ID, key)
	}
	base := "http://" + displayAddr(ln.Addr())
	fmt.Fprintf(stdout, "  API        %s/api/v1/partner   (header X-API-KEY)\n  Docs       %s/docs\n  Console    %s/console   (operators)\n  Dashboard  %s/dashboard   (partners' teams)\n",
		base, base, base, base)
	fmt.Fprintf(stdout, "partnerd (%s) listening on %s\n", cfg.Env, ln.Addr())
	return a.Serve(ctx, ln)
}

// stopOnSignal returns a context that ends at the first SIGINT or SIGTERM,
// which starts a graceful stop (the service logs what it waits for). A second
// SIGINT (Ctrl-C again: whoever pressed it does not want to wait) exits at once
// with status 130, leaving what was in flight as a crash would: the jobs taken
// are rescued, and the transactions stay as committed. Only SIGINT counts
// twice: a supervisor's SIGTERM after a Ctrl-C (make devchain's script stopping
// its children) still lets the stop finish.
func stopOnSignal(log *slog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		interrupts := 0
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if sig == os.Interrupt {
					interrupts++
				}
				if interrupts == 2 {
					log.Warn("interrupted again: exiting now, without waiting")
					os.Exit(130)
				}
				if ctx.Err() == nil {
					hint := ""
					if sig == os.Interrupt {
						hint = " (Ctrl-C again to exit at once)"
					}
					log.Info("received " + sig.String() + ": stopping" + hint)
					cancel()
				}
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

func displayAddr(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		return fmt.Sprintf("localhost:%d", tcp.Port)
	}
	return addr.String()
}

// openStore opens the configured database (DATABASE_URL), for the commands that
// need only the store.
func openStore(ctx context.Context) (*store.Store, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	st.UseSecrets(cfg.Secrets)
	return st, nil
}

func migrate(stdout io.Writer) error {
	ctx := context.Background()
	st, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied %d migration(s)\n", n)
	return nil
}

func createPartner(args []string, log *slog.Logger, stdout, stderr io.Writer) error {
	return withNamedApp("partners create", "partner", args, log, stderr, func(ctx context.Context, a *app.App, name string, asJSON bool) error {
		created, err := a.Actions().CreatePartner(ctx, uow.Plain[actions.NewPartner, actions.Tx](), cli(), name)
		if err != nil {
			return err
		}
		p, key := created.Partner, created.Secret
		if asJSON {
			return json.NewEncoder(stdout).Encode(struct {
				PartnerID   string `json:"partner_id"`
				Name        string `json:"name"`
				Environment string `json:"environment"`
				APIKey      string `json:"api_key"`
				KeyID       string `json:"key_id"`
			}{p.ID.String(), p.Name, string(p.Environment), key, p.KeyID.String()})
		}
		fmt.Fprintf(stdout, "partner_id:  %s\nname:        %s\nenvironment: %s\napi_key:     %s\nkey_id:      %s\n\nThe API key is shown only now; store it safely.\n",
			p.ID, p.Name, p.Environment, key, p.KeyID)
		return nil
	})
}

// withNamedApp parses the --name and --json flags of command (which creates a
// what), opens the service and runs fn with them.
func withNamedApp(command, what string, args []string, log *slog.Logger, stderr io.Writer,
	fn func(ctx context.Context, a *app.App, name string, asJSON bool) error) error {
	fs := newFlags(command, stderr)
	name := fs.String("name", "", "the "+what+"'s name (required)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *name == "" {
		return errors.New(command + ": --name is required")
	}
	return withApp(log, func(ctx context.Context, a *app.App) error { return fn(ctx, a, *name, *asJSON) })
}

// listen runs a local webhook receiver that verifies signatures and timestamps,
// drops duplicates by webhook id and prints each event (like `stripe listen`).
func listen(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("listen", stderr)
	secret := fs.String("secret", "", "the endpoint's signing secret, whsec_… (required)")
	addr := fs.String("addr", ":9000", "address to listen on")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *secret == "" {
		return errors.New("listen: --secret is required")
	}
	l, err := listener.New(*secret, stdout)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return listener.Run(ctx, *addr, l, func(bound string) {
		fmt.Fprintf(stdout, "listening for webhooks on http://%s/ (Ctrl-C to stop)\n", bound)
	})
}
