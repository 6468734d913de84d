package paymentcases_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/testsupport/testdb"
)

// With screening decisions held for a second operator, a release proposed by one
// compliance officer frees nothing until another approves: a treasury operator
// cannot approve it (compliance is named as missing); a second compliance officer
// does, and the held funds are sold.
func TestScreeningReleaseNeedsAComplianceApprover(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := start(t, db, map[string]string{"APPROVALS": "screening_review"})
			_, adaKey := e.api.NewOperatorWith(t, "Ada", operators.Compliance)
			_, tundeKey := e.api.NewOperatorWith(t, "Tunde", operators.Treasury)
			_, bolaKey := e.api.NewOperatorWith(t, "Bola", operators.Compliance)
			ada, tunde, bola := e.api.OperatorClient(t, adaKey), e.api.OperatorClient(t, tundeKey), e.api.OperatorClient(t, bolaKey)

			e.listSender("OFAC SDN")
			tx := e.create("31000")
			d := onChain{e}.pay(tx, tx.CryptoAmount)
			for range required + 2 {
				e.chain.Backend.Commit()
			}
			require.Eventually(t, func() bool { d = e.get(tx.Id); return *d.DepositStatus == "confirmed" }, 30*time.Second, 20*time.Millisecond)
			require.True(t, *d.UnderReview)
			require.NotNil(t, e.queued(tx.Id), "held for review")

			res, err := ada.ReviewTransactionWithResponse(ctx, tx.Id, &operatorclient.ReviewTransactionParams{IdempotencyKey: uuid.NewString()},
				operatorclient.ReviewRequest{Decision: operatorclient.Release, Note: "a false match: another holder of the name"})
			require.NoError(t, err)
			require.Equal(t, http.StatusAccepted, res.StatusCode(), string(res.Body))
			p := res.JSON202.Data
			require.Equal(t, operatorclient.ApprovalActionScreeningReview, p.Action)
			require.Equal(t, operatorclient.OperatorRoleCompliance, p.RequiredRole)
			require.True(t, *e.get(tx.Id).UnderReview, "proposed: still held")

			refused, err := tunde.ApproveApprovalWithResponse(ctx, p.Id, &operatorclient.ApproveApprovalParams{IdempotencyKey: uuid.NewString()}, operatorclient.EmptyRequest{})
			require.NoError(t, err)
			require.Equal(t, http.StatusForbidden, refused.StatusCode(), string(refused.Body))
			require.Equal(t, []operatorclient.ErrorDetail{{Field: "role", Message: "compliance"}}, refused.JSON403.Error.Details)
			require.True(t, *e.get(tx.Id).UnderReview, "refused: still held")

			ok, err := bola.ApproveApprovalWithResponse(ctx, p.Id, &operatorclient.ApproveApprovalParams{IdempotencyKey: uuid.NewString()}, operatorclient.EmptyRequest{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))
			require.Equal(t, "Bola", ok.JSON200.Data.DecidedBy.Name)
			require.Eventually(t, func() bool { d = e.get(tx.Id); return d.Status == client.TransactionStatusOrderFilled }, 30*time.Second, 20*time.Millisecond)
			require.False(t, *d.UnderReview)
			require.Nil(t, e.queued(tx.Id), "out of the queue")
			e.silent(tx.Id)
		})
	}
}
