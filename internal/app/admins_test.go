package app

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/operators"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// While the team is every operator an admin (as the migration to roles left
// them), the service warns at start; once one operator holds another role, or
// while there is one operator, it does not.
func TestWarnsWhileEveryOperatorIsAnAdmin(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			var logs bytes.Buffer
			a := &App{operators: operators.NewService(st, store.Now), log: slog.New(slog.NewTextHandler(&logs, nil))}
			add := func(roles ...operators.Role) *operators.Operator {
				o := &operators.Operator{ID: uuid.New(), Name: "Op", Roles: roles, KeyHash: uuid.NewString(), KeyPrefix: "sk_op_", CreatedAt: store.Now()}
				require.NoError(t, st.CreateOperator(ctx, o))
				return o
			}
			add(operators.Admin)
			a.warnLoneAdmins(ctx)
			require.Empty(t, logs.String(), "one operator: nothing to separate")
			second := add(operators.Admin)
			a.warnLoneAdmins(ctx)
			require.Contains(t, logs.String(), "level=WARN")
			require.Contains(t, logs.String(), "every operator is an admin")
			logs.Reset()
			require.NoError(t, st.SetOperatorRoles(ctx, second.ID, []operators.Role{operators.Treasury}))
			a.warnLoneAdmins(ctx)
			require.Empty(t, logs.String(), "roles in use")
		})
	}
}
