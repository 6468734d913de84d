package operatorapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/operatorapi"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// An operator invites a partner's first admin: 201 with the user and the link's
// path, shown once (a retry with the same key replays it; only the token's hash
// is stored); the team lists without secrets; the invitation is in the audit log
// with the user's partner and address; another partner's id is 404; an address
// already active is refused.
func TestInvitePartnerUser(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, nil)
		ctx := context.Background()
		opKey := env.NewOperator(t)
		ops := env.OperatorClient(t, opKey)
		cr, err := ops.CreatePartnerWithResponse(ctx, &oc.CreatePartnerParams{IdempotencyKey: key()}, oc.NameRequest{Name: "Acme Pay"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, cr.StatusCode(), string(cr.Body))
		p := cr.JSON200.Data.Partner

		k := key()
		body := oc.InvitePartnerUserRequest{Email: "Ada@Acme.example", Role: oc.PartnerUserRoleAdmin}
		before := time.Now()
		inv, err := ops.InvitePartnerUserWithResponse(ctx, p.Id, &oc.InvitePartnerUserParams{IdempotencyKey: k}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, inv.StatusCode(), string(inv.Body))
		got := inv.JSON201.Data
		require.Equal(t, "Ada@Acme.example", got.User.Email)
		require.Equal(t, p.Id, got.User.PartnerId)
		require.Equal(t, oc.PartnerUserRoleAdmin, got.User.Role)
		require.Equal(t, oc.PartnerUserStatusInvited, got.User.Status)
		require.False(t, got.User.TotpEnabled)
		require.Nil(t, got.User.DisabledAt)
		require.Contains(t, string(inv.Body), `"disabled_at":null`)
		require.True(t, strings.HasPrefix(got.Invitation.InviteUrl, "/dashboard/invite/"), got.Invitation.InviteUrl)
		token := strings.TrimPrefix(got.Invitation.InviteUrl, "/dashboard/invite/")
		require.GreaterOrEqual(t, len(token), 43)
		require.WithinDuration(t, before.Add(72*time.Hour), got.Invitation.ExpiresAt, time.Minute)
		// The whole link, on the service's own address (PUBLIC_URL unset: where it
		// listens), opens the page where the person sets a password.
		require.Equal(t, env.Root+got.Invitation.InviteUrl, got.Invitation.InviteLink)
		page, err := http.Get(got.Invitation.InviteLink)
		require.NoError(t, err)
		html, err := io.ReadAll(page.Body)
		require.NoError(t, err)
		_ = page.Body.Close()
		require.Equal(t, http.StatusOK, page.StatusCode, string(html))
		require.Contains(t, string(html), "password")

		again, err := ops.InvitePartnerUserWithResponse(ctx, p.Id, &oc.InvitePartnerUserParams{IdempotencyKey: k}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, again.StatusCode(), string(again.Body))
		require.Equal(t, "true", again.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, got.Invitation.InviteUrl, again.JSON201.Data.Invitation.InviteUrl, "the retry replays; no second invitation")

		// Stored: the token's hash, never the token.
		var hash string
		var n int
		require.NoError(t, env.Store.SQL().QueryRowContext(ctx, `SELECT token_hash, (SELECT COUNT(*) FROM partner_invitations) FROM partner_invitations`).Scan(&hash, &n))
		require.Equal(t, 1, n)
		require.Equal(t, partnerusers.HashToken(token), hash)
		for _, table := range []string{"partner_invitations", "partner_users", "operator_audit"} {
			require.NotContains(t, tableText(t, env, table), token, table)
		}

		list, err := ops.ListPartnerUsersWithResponse(ctx, p.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
		require.Len(t, list.JSON200.Data, 1)
		require.Equal(t, got.User.Id, list.JSON200.Data[0].Id)
		require.NotContains(t, string(list.Body), token)
		require.NotContains(t, string(list.Body), "hash")

		// The audit: the operator invited this user of this partner.
		action := "partner_user_invited"
		au, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{Action: &action})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, au.StatusCode(), string(au.Body))
		require.Len(t, au.JSON200.Data.Data, 1)
		e := au.JSON200.Data.Data[0]
		require.Equal(t, "operator", e.Actor)
		require.Equal(t, env.PartnerID(t, cr.JSON200.Data.Key.Key), *e.PartnerId)
		require.Equal(t, got.User.Id, *e.SubjectId)
		require.Equal(t, "Ada@Acme.example", *e.SubjectName)
		require.Equal(t, "Ada@Acme.example", *e.Reference)
		require.Equal(t, "Acme Pay", *e.PartnerName)

		// Another partner's id, a bad address or role.
		other := uuid.New()
		nf, err := ops.InvitePartnerUserWithResponse(ctx, other, &oc.InvitePartnerUserParams{IdempotencyKey: key()}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nf.StatusCode(), string(nf.Body))
		nl, err := ops.ListPartnerUsersWithResponse(ctx, other)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nl.StatusCode(), string(nl.Body))
		bad, err := ops.InvitePartnerUserWithResponse(ctx, p.Id, &oc.InvitePartnerUserParams{IdempotencyKey: key()},
			oc.InvitePartnerUserRequest{Email: "not an address", Role: oc.PartnerUserRoleFinance})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode(), string(bad.Body))
		require.Equal(t, "invalid_request", string(bad.JSON400.Error.Code))
		for _, raw := range []string{`{"email":"bob@acme.example","role":"owner"}`, `{"email":"bob@acme.example"}`, `{"email":"bob@acme.example","role":"admin","x":1}`} {
			st := post(t, env, opKey, "/partners/"+p.Id.String()+"/users", raw, key())
			require.Equal(t, http.StatusBadRequest, st, raw)
		}
		st := post(t, env, opKey, "/partners/"+p.Id.String()+"/users", `{"email":"bob@acme.example","role":"admin"}`, "")
		require.Equal(t, http.StatusBadRequest, st, "the Idempotency-Key is required")

		// Accepted, the user is active; their address is not invited again.
		_, err = env.App.PartnerUsers().Accept(ctx, token, "correct horse battery staple")
		require.NoError(t, err)
		list, err = ops.ListPartnerUsersWithResponse(ctx, p.Id)
		require.NoError(t, err)
		require.Equal(t, oc.PartnerUserStatusActive, list.JSON200.Data[0].Status)
		dup, err := ops.InvitePartnerUserWithResponse(ctx, p.Id, &oc.InvitePartnerUserParams{IdempotencyKey: key()},
			oc.InvitePartnerUserRequest{Email: "ada@acme.EXAMPLE", Role: oc.PartnerUserRoleFinance})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, dup.StatusCode(), string(dup.Body))
		require.Contains(t, dup.JSON400.Message, "already a user")
	})
}

// post sends a raw operator POST with idem as its Idempotency-Key (none when
// empty) and returns the answer's status.
func post(t *testing.T, env *apitest.Env, opKey, path, body, idem string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.OperatorURL()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-KEY", opKey)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	r, err := env.OperatorHTTPClient(t).Do(req)
	require.NoError(t, err)
	_ = r.Body.Close()
	return r.StatusCode
}

// tableText returns every row of table as text.
func tableText(t *testing.T, env *apitest.Env, table string) string {
	t.Helper()
	rows, err := env.Store.SQL().QueryContext(context.Background(), `SELECT * FROM `+table)
	require.NoError(t, err)
	defer func() { _ = rows.Close() }()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		for _, v := range vals {
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprint(&b, v, "|")
		}
		b.WriteByte('\n')
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, b.String(), table)
	return b.String()
}

// TestPartnerUserEnumsInTheContract: the contract's roles and statuses are the
// domain's, value for value.
func TestPartnerUserEnumsInTheContract(t *testing.T) {
	t.Parallel()
	spec, err := operatorapi.Spec()
	require.NoError(t, err)
	var roles, statuses []string
	for _, v := range spec.Components.Schemas["PartnerUserRole"].Value.Enum {
		roles = append(roles, v.(string))
	}
	for _, v := range spec.Components.Schemas["PartnerUserStatus"].Value.Enum {
		statuses = append(statuses, v.(string))
	}
	var want []string
	for _, r := range partnerusers.Roles {
		want = append(want, string(r))
	}
	require.Equal(t, want, roles)
	require.ElementsMatch(t, []string{string(partnerusers.Invited), string(partnerusers.Active), string(partnerusers.Disabled)}, statuses)
}
