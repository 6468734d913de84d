package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"partnerd/internal/app"
	"partnerd/internal/audit/actor"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/kit/uow"
)

// createOperator creates a back-office operator and prints its key once; with
// --json exactly {"operator_id": "…", "name": "…", "api_key": "…"}. The audit log
// records it as the command line's.
func createOperator(args []string, log *slog.Logger, stdout, stderr io.Writer) error {
	return withNamedApp("operators create", "operator", args, log, stderr, func(ctx context.Context, a *app.App, name string, asJSON bool) error {
		created, err := a.Actions().CreateOperator(ctx, uow.Plain[actions.NewOperator, actions.Tx](), actor.CLI, name)
		if err != nil {
			return err
		}
		o, key := created.Operator, created.Secret
		if asJSON {
			return json.NewEncoder(stdout).Encode(struct {
				OperatorID string `json:"operator_id"`
				Name       string `json:"name"`
				APIKey     string `json:"api_key"`
			}{o.ID.String(), o.Name, key})
		}
		fmt.Fprintf(stdout, "operator_id: %s\nname:        %s\napi_key:     %s\n\nThe API key is shown only now; store it safely.\n", o.ID, o.Name, key)
		return nil
	})
}
