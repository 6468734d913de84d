package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apikeys"
	"partnerd/internal/app"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/config"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partners"
)

// partnerKeys runs `partners keys roll|revoke`: the operator API's key actions for
// a shell on the server, the same use cases; the audit log records them as the
// command line's (actor cli: no operator acted).
func partnerKeys(action string, args []string, log *slog.Logger, stdout, stderr io.Writer) error {
	fs := newFlags("partners keys "+action, stderr)
	partner := fs.String("partner", "", "the partner's id (required)")
	keyID := fs.String("key", "", "the key's id, from GET /partners/{id}/keys (required)")
	overlap := fs.Duration("overlap", apikeys.DefaultOverlap, "how long the rolled key keeps working (roll)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	pid, err1 := uuid.Parse(*partner)
	kid, err2 := uuid.Parse(*keyID)
	if err1 != nil || err2 != nil {
		return errors.New("partners keys " + action + ": --partner and --key take ids")
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
	if action == "revoke" {
		k, err := a.Actions().RevokeKey(ctx, uow.Plain[*apikeys.Key, actions.Tx](), cli(), apikeys.Partner, pid, kid)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "key %s (%s…) revoked at %s; running servers stop accepting it within %s.\n",
			k.ID, k.Prefix, k.RevokedAt.Format(time.RFC3339), partners.KeyCacheTTL)
		return nil
	}
	k, err := a.Actions().RollKey(ctx, uow.Plain[*apikeys.Issued, actions.Tx](), cli(), apikeys.Partner, pid, kid, *overlap)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			KeyID  string `json:"key_id"`
			APIKey string `json:"api_key"`
		}{k.Key.ID.String(), k.Secret})
	}
	fmt.Fprintf(stdout, "key_id:  %s\napi_key: %s\n\nThe API key is shown only now; the old key works for %s more.\n", k.Key.ID, k.Secret, durationWords(*overlap))
	return nil
}
