package lifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
)

// TestAllowedActions: what an operator may do in each state, as the console offers
// it; every action not listed answers InvalidStateTransition from the same guard.
func TestAllowedActions(t *testing.T) {
	t.Parallel()
	now := time.Now()
	dep := func(status string) *Deposit { return &Deposit{Status: status} }
	cases := []struct {
		name string
		tx   Transaction
		want []OperatorAction
	}{
		{"awaiting deposit", Transaction{Status: AwaitingDeposit}, []OperatorAction{}},
		{"partial payment", Transaction{Status: AwaitingDeposit, Deposit: dep(DepositStatusPartial)}, []OperatorAction{}},
		{"deposit confirming", Transaction{Status: DepositConfirming, Deposit: dep(DepositStatusConfirming)}, []OperatorAction{ActionFail}},
		{"awaiting fill", Transaction{Status: DepositConfirming, Deposit: dep(DepositStatusConfirmed)}, []OperatorAction{ActionFill, ActionFail}},
		{"order filled", Transaction{Status: OrderFilled, Deposit: dep(DepositStatusConfirmed)}, []OperatorAction{ActionSettle, ActionFail}},
		{"completed, not paid out", Transaction{Status: Completed, Deposit: dep(DepositStatusConfirmed)}, []OperatorAction{ActionPayout}},
		{"completed and paid out", Transaction{Status: Completed, Deposit: dep(DepositStatusConfirmed), PayoutSettledAt: &now}, []OperatorAction{}},
		{"failed", Transaction{Status: Failed, Deposit: dep(DepositStatusFailed)}, []OperatorAction{ActionRefund}},
		{"expired short", Transaction{Status: Expired, Deposit: dep(DepositStatusUnderpaid)}, []OperatorAction{ActionAccept, ActionRefund}},
		{"expired unpaid", Transaction{Status: Expired}, []OperatorAction{}},
		{"refunded", Transaction{Status: Refunded, Deposit: dep(DepositStatusRefunded)}, []OperatorAction{}},
		{"cancelled", Transaction{Status: Cancelled}, []OperatorAction{}},
	}
	for _, c := range cases {
		got := AllowedActions(&c.tx)
		require.Equal(t, c.want, got, c.name)
		for _, a := range OperatorActions {
			err := Check(&c.tx, a)
			if contains(got, a) {
				require.NoError(t, err, "%s: %s", c.name, a)
			} else {
				require.Equal(t, apperr.InvalidStateTransition, apperr.CodeOf(err), "%s: %s", c.name, a)
			}
		}
	}
	require.Error(t, Check(&Transaction{}, "teleport"))
}

func contains(as []OperatorAction, a OperatorAction) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}
