package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestOperatorsCreateJSON(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", db.URL)
			var out, errOut bytes.Buffer
			require.NoError(t, run([]string{"operators", "create", "--name", "Ada Ops", "--role", "treasury,viewer", "--json"}, &out, &errOut))

			// Exactly the documented object, and nothing else on stdout.
			var raw map[string]any
			dec := json.NewDecoder(&out)
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&raw))
			require.False(t, dec.More())
			require.Equal(t, []any{"viewer", "treasury"}, raw["roles"], "known roles, in their order")
			delete(raw, "roles")
			got := map[string]string{}
			for k, v := range raw {
				got[k] = v.(string)
			}
			require.ElementsMatch(t, []string{"operator_id", "name", "api_key"}, keys(got))
			require.Equal(t, "Ada Ops", got["name"])
			require.True(t, strings.HasPrefix(got["api_key"], "sk_op_"))
			require.GreaterOrEqual(t, len(strings.TrimPrefix(got["api_key"], "sk_op_")), 43, "32 bytes of entropy")
			require.NotContains(t, errOut.String(), got["api_key"], "the key is never logged")

			// Stored hashed: the key authenticates, and is nowhere in the table.
			st, err := store.Open(context.Background(), db.URL)
			require.NoError(t, err)
			defer st.Close()
			o, err := operators.NewService(st, store.Now).Authenticate(context.Background(), got["api_key"])
			require.NoError(t, err)
			require.Equal(t, got["operator_id"], o.ID.String())
			require.NotEqual(t, got["api_key"], o.KeyHash)
		})
	}
}

func TestOperatorsCreateText(t *testing.T) {
	t.Setenv("DATABASE_URL", "sqlite:"+filepath.Join(t.TempDir(), "o.db"))
	var out bytes.Buffer
	require.NoError(t, run([]string{"operators", "create", "--name", "Ada", "--role", "admin"}, &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "api_key:     sk_op_")
	require.Contains(t, out.String(), "roles:       admin")
	require.Error(t, run([]string{"operators", "create", "--role", "admin"}, &out, &bytes.Buffer{}), "--name is required")
	require.Error(t, run([]string{"operators", "create", "--name", "Bo"}, &out, &bytes.Buffer{}), "--role is required")
	err := run([]string{"operators", "create", "--name", "Bo", "--role", "treasury,boss"}, &out, &bytes.Buffer{})
	require.ErrorContains(t, err, `"boss"`, "an unknown role is named")
	require.Error(t, run([]string{"operators", "delete"}, &out, &bytes.Buffer{}))
}

// operators roles replaces an operator's roles; the audit names the command line
// and the host's user, as for every change the command makes, a screening list
// imported included.
func TestOperatorsRolesAndTheCommandLinesAudit(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", db.URL)
			ctx := context.Background()
			var out bytes.Buffer
			require.NoError(t, run([]string{"operators", "create", "--name", "Ada", "--role", "viewer", "--json"}, &out, &bytes.Buffer{}))
			var created struct {
				OperatorID string `json:"operator_id"`
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &created))
			out.Reset()
			require.NoError(t, run([]string{"operators", "roles", created.OperatorID, "--set", "compliance,treasury"}, &out, &bytes.Buffer{}))
			require.Contains(t, out.String(), "treasury,compliance")
			require.Error(t, run([]string{"operators", "roles", created.OperatorID, "--set", "root"}, &out, &bytes.Buffer{}))
			require.Error(t, run([]string{"operators", "roles", "not-an-id", "--set", "viewer"}, &out, &bytes.Buffer{}))

			list := filepath.Join(t.TempDir(), "list.txt")
			require.NoError(t, os.WriteFile(list, []byte("0x"+strings.Repeat("5e", 20)+"\n"), 0o600))
			require.NoError(t, run([]string{"screening", "import", "--source", "OFAC SDN", "--published", "2026-11-01", list}, &out, &bytes.Buffer{}))
			err := run([]string{"screening", "import", "--source", "OFAC\u202eNDS", "--published", "2026-11-01", list}, &out, &bytes.Buffer{})
			require.ErrorContains(t, err, "U+202E", "a source name keeps the text rule")

			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			defer st.Close()
			id := uuid.MustParse(created.OperatorID)
			o, err := st.OperatorByID(ctx, id)
			require.NoError(t, err)
			require.Equal(t, []operators.Role{operators.Treasury, operators.Compliance}, o.Roles)
			entries, err := st.ListAudit(ctx, audit.Filter{}, nil, 100)
			require.NoError(t, err)
			byAction := map[audit.Action]*audit.Entry{}
			for _, e := range entries {
				byAction[e.Action] = e
			}
			for _, a := range []audit.Action{audit.OperatorCreated, audit.OperatorRolesChanged, audit.ScreeningListImported} {
				e := byAction[a]
				require.NotNil(t, e, "the audit has %s", a)
				require.Equal(t, audit.ByCLI, e.Actor, a)
				require.NotEmpty(t, e.CLIUser, "%s names the host's user", a)
			}
			require.Equal(t, id, *byAction[audit.OperatorRolesChanged].SubjectID)
			require.Equal(t, "treasury,compliance", *byAction[audit.OperatorRolesChanged].Reference)
			require.Contains(t, *byAction[audit.ScreeningListImported].Reference, "OFAC SDN")
		})
	}
}
