package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// Every operator action leaves one log line naming the operator, the action, the
// transaction and the reference, written once its unit of work committed; a
// refused one says why.
func TestActionsAreLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, testdb.SQLite(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	var buf bytes.Buffer
	s := New(Deps{Begin: store.For(st, func(tx *store.Tx) Tx { return tx }).WithTx, Lifecycle: lifecycle.NewEngine(store.For(st, func(tx *store.Tx) lifecycle.Tx { return tx }), lifecycle.Config{Now: store.Now}),
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	op, id := actor.OfOperator(uuid.New(), "Ada"), uuid.New()

	_, err = s.act(ctx, uow.Plain[*Acted, Tx](), op, "settle", id, "LP-7", func(ctx context.Context, _ lifecycle.Tx, by actor.Actor) (*lifecycle.Transaction, error) {
		require.Equal(t, op, by)
		require.Zero(t, buf.Len(), "nothing is logged before the commit")
		return &lifecycle.Transaction{ID: id, PartnerID: uuid.New(), Status: lifecycle.Completed}, nil
	})
	require.NoError(t, err)
	_, err = s.act(ctx, uow.Plain[*Acted, Tx](), op, "payout", id, "NIP-1", func(context.Context, lifecycle.Tx, actor.Actor) (*lifecycle.Transaction, error) {
		return nil, apperr.New(apperr.InvalidStateTransition, "no")
	})
	require.Error(t, err)

	dec := json.NewDecoder(&buf)
	var ok, refused map[string]any
	require.NoError(t, dec.Decode(&ok))
	require.NoError(t, dec.Decode(&refused))
	require.Equal(t, "operator action", ok["msg"])
	require.Equal(t, op.ID.String(), ok["operator_id"])
	require.Equal(t, "settle", ok["action"])
	require.Equal(t, id.String(), ok["transaction_id"])
	require.Equal(t, "LP-7", ok["reference"])
	require.Equal(t, "completed", ok["status"])
	require.Equal(t, "operator action refused", refused["msg"])
	require.Equal(t, "invalid_state_transition", refused["error_code"])
	require.Equal(t, id.String(), refused["transaction_id"])
}
