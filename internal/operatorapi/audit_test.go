package operatorapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/operators"
)

// Every operator action leaves one log line naming the operator, the action, the
// transaction and the reference; a refused one says why.
func TestActionsAreLogged(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := &Server{log: slog.New(slog.NewJSONHandler(&buf, nil))}
	op := &operators.Operator{ID: uuid.New()}
	ctx := context.WithValue(context.Background(), operatorKey{}, op)
	id := uuid.New()

	_, err := s.act(ctx, "settle", id, "LP-7", func(by lifecycle.Actor) (*lifecycle.Transaction, error) {
		require.Equal(t, op.ID, by.OperatorID)
		return &lifecycle.Transaction{ID: id, PartnerID: uuid.New(), Status: lifecycle.Completed}, nil
	})
	require.NoError(t, err)
	_, err = s.act(ctx, "payout", id, "NIP-1", func(lifecycle.Actor) (*lifecycle.Transaction, error) {
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
}
