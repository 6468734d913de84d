package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"partnerd/internal/app"
	"partnerd/internal/config"
)

// createOperator creates a back-office operator and prints its key once; with
// --json exactly {"operator_id": "…", "name": "…", "api_key": "…"}.
func createOperator(args []string, log *slog.Logger, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("operators create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the operator's name (required)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" {
		return errors.New("operators create: --name is required")
	}
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
	o, key, err := a.Operators().Create(ctx, *name)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			OperatorID string `json:"operator_id"`
			Name       string `json:"name"`
			APIKey     string `json:"api_key"`
		}{o.ID.String(), o.Name, key})
	}
	fmt.Fprintf(stdout, "operator_id: %s\nname:        %s\napi_key:     %s\n\nThe API key is shown only now; store it safely.\n", o.ID, o.Name, key)
	return nil
}
