package main

import (
	"context"
	"encoding/json"
	"errors"
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
// line's (actor cli: no operator acted). The link is printed once, whole (it is
// handed to someone who has no other way to find the service): PUBLIC_URL, or the
// local listening address in staging, then the path. Only its token's hash is
// stored.
func partnerUsers(args []string, log *slog.Logger, stdout, stderr io.Writer) error {
	fs := newFlags("partners users invite", stderr)
	partner := fs.String("partner", "", "the partner's id (required)")
	email := fs.String("email", "", "the person's address (required)")
	role := fs.String("role", "", "admin, developer or finance (required)")
	baseURL := fs.String("base-url", "", "what the link starts with, e.g. https://partnerd.example.com (default: PUBLIC_URL, or http://localhost:PORT of LISTEN_ADDR)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args, 0); err != nil {
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
	base := strings.TrimRight(*baseURL, "/")
	if base == "" {
		base = cfg.LinkBase(nil)
	}
	link := base + n.Path()
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			UserID    string `json:"user_id"`
			InviteURL string `json:"invite_url"`
			ExpiresAt string `json:"expires_at"`
		}{n.User.ID.String(), link, n.Invitation.ExpiresAt.Format(time.RFC3339)})
	}
	// A person still invited gets a new link, and the earlier one (the API's,
	// the dashboard's or this command's) stops working: say so, since that link
	// may already have been handed on. A new user is made with the invitation.
	replaced := ""
	if !n.User.CreatedAt.Equal(n.Invitation.CreatedAt) {
		replaced = fmt.Sprintf("\n%s was already invited: the earlier link no longer works; hand on this one.", n.User.Email)
	}
	fmt.Fprintf(stdout, "user_id:    %s\ninvite_url: %s\nexpires_at: %s\n\nThe link is shown only now. It works once, until it expires;\nthe person sets their password there.%s\n",
		n.User.ID, link, n.Invitation.ExpiresAt.Format(time.RFC3339), replaced)
	return nil
}
