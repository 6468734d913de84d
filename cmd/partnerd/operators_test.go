package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/operators"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestOperatorsCreateJSON(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", db.URL)
			var out, errOut bytes.Buffer
			require.NoError(t, run([]string{"operators", "create", "--name", "Ada Ops", "--json"}, &out, &errOut))

			// Exactly the documented object, and nothing else on stdout.
			var got map[string]string
			dec := json.NewDecoder(&out)
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&got))
			require.False(t, dec.More())
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
	require.NoError(t, run([]string{"operators", "create", "--name", "Ada"}, &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "api_key:     sk_op_")
	require.Error(t, run([]string{"operators", "create"}, &out, &bytes.Buffer{}), "--name is required")
	require.Error(t, run([]string{"operators", "delete"}, &out, &bytes.Buffer{}))
}
