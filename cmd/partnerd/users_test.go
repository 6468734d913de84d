package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// TestPartnerUsersInvite: `partners users invite` prints the invitation link once
// (whole: on the listening address, or on --base-url), the link works on the service, the
// invitation is audited as the command line's, and bad flags or an unknown
// partner are refused with a message.
func TestPartnerUsersInvite(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", db.URL)
			t.Setenv("LISTEN_ADDR", "")
			t.Setenv("PUBLIC_URL", "")
			cli := func(args ...string) (string, error) {
				t.Helper()
				var out, errOut bytes.Buffer
				err := run(args, &out, &errOut)
				return out.String(), err
			}
			out, err := cli("partners", "create", "--name", "Acme Pay", "--json")
			require.NoError(t, err)
			var partner map[string]string
			require.NoError(t, json.Unmarshal([]byte(out), &partner))

			out, err = cli("partners", "users", "invite", "--partner", partner["partner_id"], "--email", "ada@acme.example", "--role", "admin", "--json")
			require.NoError(t, err)
			var invited map[string]string
			require.NoError(t, json.Unmarshal([]byte(out), &invited))
			require.True(t, strings.HasPrefix(invited["invite_url"], "http://localhost:8080/dashboard/invite/"), "the whole link, on LISTEN_ADDR's port: %s", invited["invite_url"])
			expires, err := time.Parse(time.RFC3339, invited["expires_at"])
			require.NoError(t, err)
			require.WithinDuration(t, time.Now().Add(72*time.Hour), expires, time.Minute)

			out, err = cli("partners", "users", "invite", "--partner", partner["partner_id"], "--email", "bob@acme.example", "--role", "finance",
				"--base-url", "https://partnerd.example.com/")
			require.NoError(t, err)
			require.Contains(t, out, "invite_url: https://partnerd.example.com/dashboard/invite/")
			require.Contains(t, out, "shown only now")

			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"--partner", partner["partner_id"], "--email", "carol@acme.example", "--role", "owner"}, "--role"},
				{[]string{"--partner", "nope", "--email", "carol@acme.example", "--role", "admin"}, "--partner"},
				{[]string{"--partner", uuid.NewString(), "--email", "carol@acme.example", "--role", "admin"}, "not found"},
				{[]string{"--partner", partner["partner_id"], "--email", "not an address", "--role", "admin"}, "not an address"},
				{[]string{"--partner", partner["partner_id"], "--email", "ADA@acme.example", "--role", "admin"}, ""}, // a new link for the still-invited Ada
			} {
				_, err := cli(append([]string{"partners", "users", "invite"}, c.args...)...)
				if c.want == "" {
					require.NoError(t, err)
					continue
				}
				require.ErrorContains(t, err, c.want, c.args)
			}
			_, err = cli("partners", "users", "remove")
			require.ErrorContains(t, err, `unknown command "partners users remove"`)

			env := apitest.Start(t, db, nil)
			ctx := context.Background()
			ops := env.OperatorClient(t, env.NewOperator(t))
			action := "partner_user_invited"
			res, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{Action: &action})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			require.Len(t, res.JSON200.Data.Data, 3)
			for _, e := range res.JSON200.Data.Data {
				require.Equal(t, "cli", e.Actor)
				require.Equal(t, uuid.Nil, e.OperatorId)
				require.Equal(t, partner["partner_id"], e.PartnerId.String())
			}
			require.Equal(t, invited["user_id"], res.JSON200.Data.Data[0].SubjectId.String(), "newest first: Ada's new link")

			// The first link was replaced by the last invitation of the same address;
			// Bob's works once.
			bob := strings.TrimPrefix(out[strings.Index(out, "/dashboard/invite/"):strings.Index(out, "\nexpires_at")], "/dashboard/invite/")
			_, err = env.App.PartnerUsers().Accept(ctx, strings.TrimPrefix(invited["invite_url"], "http://localhost:8080/dashboard/invite/"), "correct horse battery staple")
			require.ErrorContains(t, err, "not valid")
			_, err = env.App.PartnerUsers().Accept(ctx, bob, "correct horse battery staple")
			require.NoError(t, err)
		})
	}
}
