package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// TestCLIChangesAreAudited: account and key changes made with the command line
// (partners create, partners keys roll and revoke, operators create) are in the
// audit log as the command line's (actor cli, no operator), listed by GET /audit
// beside an operator's own action, which keeps its name; filtering by operator
// leaves the command line's out.
func TestCLIChangesAreAudited(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", db.URL)
			cli := func(args ...string) map[string]string {
				t.Helper()
				var out, errOut bytes.Buffer
				require.NoError(t, run(args, &out, &errOut), errOut.String())
				got := map[string]string{}
				if len(args) > 0 && args[len(args)-1] == "--json" {
					var raw map[string]any
					require.NoError(t, json.Unmarshal(out.Bytes(), &raw))
					for k, v := range raw {
						if s, ok := v.(string); ok { // the text fields (an operator's roles are a list)
							got[k] = s
						}
					}
				}
				return got
			}
			partner := cli("partners", "create", "--name", "Acme Pay", "--json")
			rolled := cli("partners", "keys", "roll", "--partner", partner["partner_id"], "--key", partner["key_id"], "--json")
			cli("partners", "keys", "revoke", "--partner", partner["partner_id"], "--key", rolled["key_id"])
			operator := cli("operators", "create", "--name", "Ada Ops", "--role", "admin", "--json")

			env := apitest.Start(t, db, nil)
			ops := env.OperatorClient(t, operator["api_key"])
			ctx := context.Background()
			// An operator's own action, through the API: the original key revoked.
			rv, err := ops.RevokePartnerKeyWithResponse(ctx, uuid.MustParse(partner["partner_id"]), uuid.MustParse(partner["key_id"]), nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, rv.StatusCode(), string(rv.Body))

			res, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			type row struct{ Actor, OperatorID, OperatorName, Action, Subject string }
			var got []row
			for _, e := range res.JSON200.Data.Data {
				got = append(got, row{e.Actor, e.OperatorId.String(), e.OperatorName, e.Action, e.SubjectId.String()})
			}
			nobody := uuid.Nil.String()
			require.Equal(t, []row{
				{"operator", operator["operator_id"], "Ada Ops", "key_revoked", partner["key_id"]},
				{"cli", nobody, "cli", "operator_created", operator["operator_id"]},
				{"cli", nobody, "cli", "key_revoked", rolled["key_id"]},
				{"cli", nobody, "cli", "key_rolled", partner["key_id"]},
				{"cli", nobody, "cli", "partner_created", partner["partner_id"]},
			}, got, "newest first, the command line's changes included")

			opID := uuid.MustParse(operator["operator_id"])
			mine, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{OperatorId: &opID})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, mine.StatusCode(), string(mine.Body))
			require.Len(t, mine.JSON200.Data.Data, 1, "one operator's actions only")
			require.Equal(t, "operator", mine.JSON200.Data.Data[0].Actor)
		})
	}
}
