package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strings"

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
	fs := newFlags("operators create", stderr)
	name := fs.String("name", "", "the operator's name (required)")
	role := fs.String("role", "", "their roles, comma-separated: viewer, support, treasury, compliance, admin (required)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *name == "" || *role == "" {
		fs.Usage()
		return usageError{errors.New("operators create: --name and --role are required")}
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
	fs := newFlags("operators roles", stderr)
	set := fs.String("set", "", "the new roles, comma-separated (required)")
	// OPERATOR_ID comes first (flags may also precede it).
	idArg := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		idArg, args = args[0], args[1:]
	}
	positional := 0
	if idArg == "" {
		positional = 1
	}
	if err := parse(fs, args, positional); err != nil {
		return err
	}
	if idArg == "" {
		idArg = fs.Arg(0)
	}
	if idArg == "" || *set == "" {
		fs.Usage()
		return usageError{errors.New("operators roles: OPERATOR_ID and --set are required")}
	}
	id, err := uuid.Parse(idArg)
	if err != nil {
		return fmt.Errorf("operators roles: %q is no operator id", idArg)
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
