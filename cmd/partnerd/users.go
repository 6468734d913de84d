package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/app"
	"partnerd/internal/config"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partnerusers"
)

// partnerUsers runs `partners users invite`: the operator API's invitation for a
// shell on the server, the same use case; the audit log records it as the command
// line's (actor cli: no operator acted). The link is printed once: only its
// token's hash is stored.
func partnerUsers(action string, args []string, log *slog.Logger, stdout, stderr io.Writer) error {
	if action != "invite" {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("partners users invite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	partner := fs.String("partner", "", "the partner's id (required)")
	email := fs.String("email", "", "the person's address (required)")
	role := fs.String("role", "", "admin, developer or finance (required)")
	baseURL := fs.String("base-url", "", "the dashboard's public address, e.g. https://partnerd.example.com, to print the whole link")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pid, err := uuid.Parse(*partner)
	if err != nil {
		return errors.New("partners users invite: --partner takes the partner's id")
	}
	r, err := partnerusers.ParseRole(*role)
	if err != nil {
		return errors.New("partners users invite: --role is admin, developer or finance")
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
	n, err := a.PartnerUsers().Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), pid, *email, r, cli())
	if err != nil {
		return err
	}
	link := strings.TrimRight(*baseURL, "/") + n.Path()
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			UserID    string `json:"user_id"`
			InviteURL string `json:"invite_url"`
			ExpiresAt string `json:"expires_at"`
		}{n.User.ID.String(), link, n.Invitation.ExpiresAt.Format(time.RFC3339)})
	}
	where := ""
	if *baseURL == "" {
		where = " (a path on this server's dashboard; --base-url prints the whole link)"
	}
	fmt.Fprintf(stdout, "user_id:    %s\ninvite_url: %s\nexpires_at: %s\n\nThe link is shown only now%s. It works once, until it expires;\nthe person sets their password there.\n",
		n.User.ID, link, n.Invitation.ExpiresAt.Format(time.RFC3339), where)
	return nil
}
