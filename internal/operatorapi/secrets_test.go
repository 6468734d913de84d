package operatorapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/store"
	"partnerd/internal/store/storetest"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// After every answer that hands out a secret (a partner created, a partner key
// issued and rolled, an operator created, an operator key issued and rolled, a
// partner user invited, a webhook endpoint registered and its secret rotated),
// no table holds any of those secrets in the clear: keys are kept hashed,
// signing secrets sealed, and the answers kept for retries are sealed too. A
// retry still gets the secret.
func TestNoSecretAtRestInTheClear(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, nil)
		ctx := context.Background()
		ops := env.OperatorClient(t, env.NewOperator(t))
		var secrets []string
		keep := func(what, s string) {
			t.Helper()
			require.NotEmpty(t, s, what)
			secrets = append(secrets, s)
		}

		k := key()
		p, err := ops.CreatePartnerWithResponse(ctx, &oc.CreatePartnerParams{IdempotencyKey: k}, oc.NameRequest{Name: "Secret Pay"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, p.StatusCode(), string(p.Body))
		keep("partner key", p.JSON200.Data.Key.Key)
		replay, err := ops.CreatePartnerWithResponse(ctx, &oc.CreatePartnerParams{IdempotencyKey: k}, oc.NameRequest{Name: "Secret Pay"})
		require.NoError(t, err)
		require.Equal(t, p.Body, replay.Body, "a retry gets the key it was answered")
		partner := p.JSON200.Data.Partner.Id
		pk, err := ops.CreatePartnerKeyWithResponse(ctx, partner, &oc.CreatePartnerKeyParams{IdempotencyKey: key()}, oc.EmptyRequest{})
		require.NoError(t, err)
		keep("second partner key", pk.JSON200.Data.Key)
		roll, err := ops.RollPartnerKeyWithResponse(ctx, partner, pk.JSON200.Data.Id, &oc.RollPartnerKeyParams{IdempotencyKey: key()}, oc.RollRequest{})
		require.NoError(t, err)
		keep("rolled partner key", roll.JSON200.Data.Key)

		o, err := ops.CreateOperatorWithResponse(ctx, &oc.CreateOperatorParams{IdempotencyKey: key()}, oc.OperatorCreateRequest{Name: "Kemi"})
		require.NoError(t, err)
		keep("operator key", o.JSON200.Data.Key.Key)
		op := o.JSON200.Data.Operator.Id
		ok, err := ops.CreateOperatorKeyWithResponse(ctx, op, &oc.CreateOperatorKeyParams{IdempotencyKey: key()}, oc.EmptyRequest{})
		require.NoError(t, err)
		keep("second operator key", ok.JSON200.Data.Key)
		oroll, err := ops.RollOperatorKeyWithResponse(ctx, op, ok.JSON200.Data.Id, &oc.RollOperatorKeyParams{IdempotencyKey: key()}, oc.RollRequest{})
		require.NoError(t, err)
		keep("rolled operator key", oroll.JSON200.Data.Key)

		inv, err := ops.InvitePartnerUserWithResponse(ctx, partner, &oc.InvitePartnerUserParams{IdempotencyKey: key()},
			oc.InvitePartnerUserRequest{Email: "ada@secret.example", Role: oc.PartnerUserRoleAdmin})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, inv.StatusCode(), string(inv.Body))
		url := inv.JSON201.Data.Invitation.InviteUrl
		keep("invitation token", url[strings.LastIndex(url, "/")+1:])

		pc := env.Client(t, p.JSON200.Data.Key.Key)
		putKey, rotKey := key(), key()
		ep, err := pc.PutWebhookEndpointWithResponse(ctx, &client.PutWebhookEndpointParams{IdempotencyKey: &putKey},
			client.WebhookEndpointRequest{Url: "http://127.0.0.1:9/hooks", Enabled: true})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, ep.StatusCode(), string(ep.Body))
		keep("signing secret", *ep.JSON200.Data.SigningSecret)
		rot, err := pc.RotateWebhookSecretWithResponse(ctx, &client.RotateWebhookSecretParams{IdempotencyKey: &rotKey})
		require.NoError(t, err)
		keep("rotated signing secret", *rot.JSON200.Data.SigningSecret)
		again, err := pc.RotateWebhookSecretWithResponse(ctx, &client.RotateWebhookSecretParams{IdempotencyKey: &rotKey})
		require.NoError(t, err)
		require.Equal(t, *rot.JSON200.Data.SigningSecret, *again.JSON200.Data.SigningSecret, "a retry gets the secret it was answered")

		cols := everyColumn(t, env.Store)
		require.Contains(t, cols, "operator_idempotency_keys.response_body", "the stored answers are read")
		for name, c := range cols {
			for _, s := range secrets {
				require.Falsef(t, holds(t, env.Store, c, s), "%s holds a secret in the clear", name)
			}
		}
	})
}

// column is one column of one table, with what its type means.
type column struct {
	table, name string
	kind        storetest.Kind
}

// everyColumn is every column of the application's tables, and the job queue's
// arguments, by "table.column".
func everyColumn(t *testing.T, s *store.Store) map[string]column {
	t.Helper()
	sc, err := storetest.Introspect(context.Background(), s)
	require.NoError(t, err)
	out := map[string]column{}
	for name, tb := range sc.Tables {
		for col, c := range tb.Columns {
			out[name+"."+col] = column{name, col, c.Kind}
		}
	}
	out["river_job.args"] = column{"river_job", "args", storetest.KindText}
	return out
}

// holds reports whether column c of any row contains s, read as text (bytes
// searched as bytes on PostgreSQL, where their text form is hexadecimal).
func holds(t *testing.T, s *store.Store, c column, secret string) bool {
	t.Helper()
	q := fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE instr(CAST(%s AS TEXT), ?) > 0`, c.table, c.name)
	var arg any = secret
	if s.Dialect() == store.Postgres {
		q = fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE strpos(CAST(%s AS TEXT), $1) > 0`, c.table, c.name)
		if c.kind == storetest.KindBytes {
			q = fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE position($1::bytea in %s) > 0`, c.table, c.name)
			arg = []byte(secret)
		}
	}
	var n int
	require.NoError(t, s.SQL().QueryRow(q, arg).Scan(&n), q)
	return n > 0
}
