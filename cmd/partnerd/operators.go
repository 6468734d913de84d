package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"

	"github.com/google/uuid"

	"partnerd/internal/app"
	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/config"
	"partnerd/internal/kit/uow"
	"partnerd/internal/store"
)

// cli is the command line as the audit records it: the partnerd command, run by
// the host's user (user@host).
func cli() actor.Actor {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	if host, err := os.Hostname(); err == nil && host != "" {
		name += "@" + host
	}
	return actor.CommandLine(name)
}

// recordCLI writes the audit row of a change the command made straight in the
// store (a screening list, secrets), as the command line's.
func recordCLI(ctx context.Context, st *store.Store, a audit.Action, reference string) error {
	e := audit.Entry{ID: uuid.New(), Action: a, Reference: &reference, CreatedAt: store.Now()}.By(cli())
	return st.InsertAudit(ctx, &e)
}

// createOperator creates a back-office operator holding --role (comma-separated)
// and prints its key once; with --json exactly {"operator_id": "…", "name": "…",
// "roles": […], "api_key": "…"}. The audit log records it as the command line's.
func createOperator(args []string, log *slog.Logger, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("operators create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the operator's name (required)")
	role := fs.String("role", "", "their roles, comma-separated: viewer, support, treasury, compliance, admin (required)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" || *role == "" {
		return errors.New("usage: partnerd operators create --name NAME --role ROLE[,ROLE…] [--json]")
	}
	roles, err := operators.ParseRoles(*role)
	if err != nil {
		return fmt.Errorf("operators create: --role: %w", err)
	}
	return withApp(log, func(ctx context.Context, a *app.App) error {
		created, err := a.Actions().CreateOperator(ctx, uow.Plain[actions.NewOperator, actions.Tx](), cli(), *name, roles)
		if err != nil {
			return err
		}
		o, key := created.Operator, created.Secret
		if *asJSON {
			return json.NewEncoder(stdout).Encode(struct {
				OperatorID string           `json:"operator_id"`
				Name       string           `json:"name"`
				Roles      []operators.Role `json:"roles"`
				APIKey     string           `json:"api_key"`
			}{o.ID.String(), o.Name, o.Roles, key})
		}
		fmt.Fprintf(stdout, "operator_id: %s\nname:        %s\nroles:       %s\napi_key:     %s\n\nThe API key is shown only now; store it safely.\n",
			o.ID, o.Name, operators.JoinRoles(o.Roles), key)
		return nil
	})
}

// setOperatorRoles replaces operator ID's roles with --set (comma-separated),
// audited as the command line's.
func setOperatorRoles(args []string, log *slog.Logger, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("operators roles", flag.ContinueOnError)
	fs.SetOutput(stderr)
	set := fs.String("set", "", "the new roles, comma-separated (required)")
	const usage = "usage: partnerd operators roles OPERATOR_ID --set ROLE[,ROLE…]"
	if len(args) == 0 {
		return errors.New(usage)
	}
	id, err := uuid.Parse(args[0])
	if err != nil {
		return fmt.Errorf("operators roles: %q is no operator id\n%s", args[0], usage)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *set == "" {
		return errors.New(usage)
	}
	roles, err := operators.ParseRoles(*set)
	if err != nil {
		return fmt.Errorf("operators roles: --set: %w", err)
	}
	return withApp(log, func(ctx context.Context, a *app.App) error {
		o, err := a.Actions().SetRoles(ctx, uow.Plain[*operators.Operator, actions.Tx](), cli(), id, roles)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "operator %s (%s): %s\n", o.ID, o.Name, operators.JoinRoles(o.Roles))
		return err
	})
}

// withApp opens the service's application for one command and closes it after.
func withApp(log *slog.Logger, fn func(ctx context.Context, a *app.App) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	ctx := context.Background()
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	return fn(ctx, a)
}
