package operatorapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// team is four operators: Ada and Bola in treasury, Chidi too (a racer), and Dayo
// who only reads.
type team struct {
	ada, bola, chidi, dayo *oc.ClientWithResponses
	adaID, bolaID          uuid.UUID
}

func newTeam(t *testing.T, env *apitest.Env) team {
	t.Helper()
	adaID, ada := env.NewOperatorWith(t, "Ada", operators.Treasury)
	bolaID, bola := env.NewOperatorWith(t, "Bola", operators.Treasury, operators.Compliance)
	_, chidi := env.NewOperatorWith(t, "Chidi", operators.Treasury)
	_, dayo := env.NewOperatorWith(t, "Dayo", operators.Viewer)
	return team{ada: env.OperatorClient(t, ada), bola: env.OperatorClient(t, bola), chidi: env.OperatorClient(t, chidi),
		dayo: env.OperatorClient(t, dayo), adaID: adaID, bolaID: bolaID}
}

// approve approves proposal id as c.
func approve(t *testing.T, c *oc.ClientWithResponses, id uuid.UUID) *oc.ApproveApprovalResponse {
	t.Helper()
	res, err := c.ApproveApprovalWithResponse(context.Background(), id, &oc.ApproveApprovalParams{IdempotencyKey: key()}, oc.EmptyRequest{})
	require.NoError(t, err)
	return res
}

// approval reads proposal id.
func approval(t *testing.T, c *oc.ClientWithResponses, id uuid.UUID) oc.Approval {
	t.Helper()
	res, err := c.GetApprovalWithResponse(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data
}

// With APPROVALS naming payouts, a batch payout proposed by one operator pays
// nothing until a second approves it; its proposer, or an operator without the
// role, cannot approve it; of two approvers racing one wins and the other is
// refused; the payout is recorded once and its audit names both operators.
func TestBatchPayoutWaitsForASecondOperator(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator", "APPROVALS": "payout"})
		ctx := context.Background()
		partnerKey := env.NewPartner(t)
		pc, partner := env.Client(t, partnerKey), env.PartnerID(t, partnerKey)
		tm := newTeam(t, env)
		var batch []uuid.UUID
		for _, fiat := range []string{"5000.00", "7500.50"} {
			batch = append(batch, completed(t, env, pc, tm.ada, fiat).Id)
		}
		req := oc.PayoutRequest{PartnerId: partner, TransactionIds: batch, Reference: "NIP-4EYES-1", FiatAmount: "12500.50"}
		k := key()
		res, err := tm.ada.CreatePayoutWithResponse(ctx, &oc.CreatePayoutParams{IdempotencyKey: k}, req)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, res.StatusCode(), string(res.Body))
		p := res.JSON202.Data
		require.Equal(t, oc.ApprovalStatusPending, p.Status)
		require.Equal(t, oc.ApprovalActionPayout, p.Action)
		require.Equal(t, "createPayout", p.Operation)
		require.Equal(t, "Ada", p.ProposedBy.Name)
		require.Equal(t, oc.OperatorRoleTreasury, p.RequiredRole)
		require.Contains(t, p.Summary, "NIP-4EYES-1")
		require.Equal(t, "12500.50", p.Parameters["fiat_amount"])
		retry, err := tm.ada.CreatePayoutWithResponse(ctx, &oc.CreatePayoutParams{IdempotencyKey: k}, req)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, retry.StatusCode(), string(retry.Body))
		require.Equal(t, p.Id, retry.JSON202.Data.Id, "a retry is the same proposal")
		require.ElementsMatch(t, batch, stage(t, tm.ada, oc.StageAwaitingPayout), "proposed: nothing paid")

		own := approve(t, tm.ada, p.Id)
		require.Equal(t, http.StatusForbidden, own.StatusCode(), string(own.Body))
		require.Equal(t, oc.ErrorCodeForbidden, own.JSON403.Error.Code)
		viewer := approve(t, tm.dayo, p.Id)
		require.Equal(t, http.StatusForbidden, viewer.StatusCode(), string(viewer.Body))
		require.Equal(t, []oc.ErrorDetail{{Field: "role", Message: "treasury"}}, viewer.JSON403.Error.Details)
		require.Equal(t, oc.ApprovalStatusPending, approval(t, tm.dayo, p.Id).Status)
		require.ElementsMatch(t, batch, stage(t, tm.ada, oc.StageAwaitingPayout), "refused approvals pay nothing")

		// Bola and Chidi approve at once: one runs the payout, the other is refused.
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i, c := range []*oc.ClientWithResponses{tm.bola, tm.chidi} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := c.ApproveApprovalWithResponse(ctx, p.Id, &oc.ApproveApprovalParams{IdempotencyKey: key()}, oc.EmptyRequest{})
				if err == nil {
					statuses[i] = r.StatusCode()
				}
			}()
		}
		wg.Wait()
		require.ElementsMatch(t, []int{http.StatusOK, http.StatusConflict}, statuses)
		done := approval(t, tm.dayo, p.Id)
		require.Equal(t, oc.ApprovalStatusApproved, done.Status)
		require.NotNil(t, done.DecidedBy)
		require.NotNil(t, done.Result, "the payout's answer")
		require.Empty(t, stage(t, tm.ada, oc.StageAwaitingPayout), "approved: paid")
		list, err := tm.dayo.ListPayoutsWithResponse(ctx, &oc.ListPayoutsParams{PartnerId: &partner})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1, "one payout")
		again := approve(t, tm.bola, p.Id)
		if done.DecidedBy.Id == tm.bolaID {
			require.Equal(t, http.StatusOK, again.StatusCode(), "the approver approving again gets the approval: %s", again.Body)
		} else {
			require.Equal(t, http.StatusConflict, again.StatusCode(), string(again.Body))
			require.Equal(t, oc.ErrorCodeApprovalClosed, again.JSON409.Error.Code)
		}

		// The audit: each transaction's payout row names the approver and the proposer.
		au, err := tm.dayo.ListAuditWithResponse(ctx, &oc.ListAuditParams{Action: ptr(oc.AuditAction("batch_payout"))})
		require.NoError(t, err)
		require.Len(t, au.JSON200.Data.Data, 2)
		for _, e := range au.JSON200.Data.Data {
			require.Equal(t, done.DecidedBy.Name, e.OperatorName)
			require.Equal(t, tm.adaID, *e.ProposerId)
			require.Equal(t, "Ada", *e.ProposerName)
		}
		for _, act := range []string{"approval_proposed", "approval_approved"} {
			au, err := tm.dayo.ListAuditWithResponse(ctx, &oc.ListAuditParams{Action: ptr(oc.AuditAction(act))})
			require.NoError(t, err)
			require.Len(t, au.JSON200.Data.Data, 1, act)
			require.Equal(t, p.Id, *au.JSON200.Data.Data[0].SubjectId, act)
		}
	})
}

// A transaction that moved between the proposal and its approval (failed, or
// paid by another approved proposal) makes the approval 409 with the action's
// own error: the proposal fails with that reason and nothing changes.
func TestApprovalAgainstAStateThatMoved(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator", "APPROVALS": "payout,fill"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		tm := newTeam(t, env)

		// Paid meanwhile: two proposals to pay one transaction; the second fails.
		tx := completedAfterApproval(t, env, pc, tm)
		var props []uuid.UUID
		for range 2 {
			res, err := tm.ada.SettlePayoutWithResponse(ctx, tx, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "NIP-" + uuid.NewString()[:8]})
			require.NoError(t, err)
			require.Equal(t, http.StatusAccepted, res.StatusCode(), string(res.Body))
			props = append(props, res.JSON202.Data.Id)
		}
		require.Equal(t, http.StatusOK, approve(t, tm.bola, props[0]).StatusCode())
		late := approve(t, tm.bola, props[1])
		require.Equal(t, http.StatusConflict, late.StatusCode(), string(late.Body))
		require.Equal(t, oc.ErrorCodeInvalidStateTransition, late.JSON409.Error.Code)
		failed := approval(t, tm.dayo, props[1])
		require.Equal(t, oc.ApprovalStatusFailed, failed.Status)
		require.Equal(t, oc.ErrorCodeInvalidStateTransition, failed.Failure.Code)
		list, err := tm.dayo.ListPayoutsWithResponse(ctx, &oc.ListPayoutsParams{})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1, "paid once")
		closed := approve(t, tm.chidi, props[1])
		require.Equal(t, http.StatusConflict, closed.StatusCode())
		require.Equal(t, oc.ErrorCodeApprovalClosed, closed.JSON409.Error.Code)

		// Failed meanwhile: a fill proposed, the transaction failed, the fill refused.
		fresh := create(t, pc, "MOVED-"+uuid.NewString(), "3000.00")
		detect(t, env, fresh.Id, uniqueHash(), true)
		fill, err := tm.ada.FillOrderWithResponse(ctx, fresh.Id, &oc.FillOrderParams{IdempotencyKey: key()}, oc.FillRequest{Rate: "1549.10", FiatAmount: "3000.00", Reference: "LP-MOVED"})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, fill.StatusCode(), string(fill.Body))
		f, err := tm.chidi.FailTransactionWithResponse(ctx, fresh.Id, &oc.FailTransactionParams{IdempotencyKey: key()}, oc.FailRequest{Reason: "the desk could not sell"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, f.StatusCode(), string(f.Body))
		refused := approve(t, tm.bola, fill.JSON202.Data.Id)
		require.Equal(t, http.StatusConflict, refused.StatusCode(), string(refused.Body))
		got, err := tm.dayo.GetOperatorTransactionWithResponse(ctx, fresh.Id)
		require.NoError(t, err)
		require.Equal(t, oc.TransactionStatusFailed, got.JSON200.Data.Status, "nothing changed")
		require.Equal(t, oc.ApprovalStatusFailed, approval(t, tm.dayo, fill.JSON202.Data.Id).Status)

		// Rejected: Bola rejects a proposal with a note; it can no longer be approved.
		again, err := tm.ada.SettlePayoutWithResponse(ctx, tx, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "NIP-REJECT"})
		require.NoError(t, err)
		rj, err := tm.bola.RejectApprovalWithResponse(ctx, again.JSON202.Data.Id, &oc.RejectApprovalParams{IdempotencyKey: key()}, oc.RejectRequest{Note: "paid already"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rj.StatusCode(), string(rj.Body))
		require.Equal(t, oc.ApprovalStatusRejected, rj.JSON200.Data.Status)
		require.Equal(t, "paid already", *rj.JSON200.Data.Note)
		require.Equal(t, http.StatusConflict, approve(t, tm.chidi, again.JSON202.Data.Id).StatusCode())
	})
}

// completedAfterApproval brings a transaction to awaiting payout while fills
// need a second operator: Ada proposes the fill, Bola approves it, Ada settles.
func completedAfterApproval(t *testing.T, env *apitest.Env, pc *client.ClientWithResponses, tm team) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	tx := create(t, pc, "4EYES-"+uuid.NewString(), "3000.00")
	detect(t, env, tx.Id, uniqueHash(), true)
	fill, err := tm.ada.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: key()}, oc.FillRequest{Rate: "1549.10", FiatAmount: "3000.00", Reference: "LP-4EYES"})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, fill.StatusCode(), string(fill.Body))
	ok := approve(t, tm.bola, fill.JSON202.Data.Id)
	require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))
	s, err := tm.ada.SettleOrderWithResponse(ctx, tx.Id, &oc.SettleOrderParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "SETTLE-4EYES"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, s.StatusCode(), string(s.Body))
	return tx.Id
}

// A proposal past its expiry cannot be approved: it reads expired.
func TestExpiredProposalCannotBeApproved(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator", "APPROVALS": "operator", "APPROVAL_TTL": "1ns"})
		ctx := context.Background()
		tm := newTeam(t, env)
		_, admin := env.NewOperatorWith(t, "Eze", operators.Admin)
		_, admin2 := env.NewOperatorWith(t, "Funmi", operators.Admin)
		res, err := env.OperatorClient(t, admin).CreateOperatorWithResponse(ctx, &oc.CreateOperatorParams{IdempotencyKey: key()},
			oc.OperatorCreateRequest{Name: "Gbenga", Roles: &[]oc.OperatorRole{oc.OperatorRoleTreasury}})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, res.StatusCode(), string(res.Body))
		late := approve(t, env.OperatorClient(t, admin2), res.JSON202.Data.Id)
		require.Equal(t, http.StatusConflict, late.StatusCode(), string(late.Body))
		require.Equal(t, oc.ErrorCodeApprovalClosed, late.JSON409.Error.Code)
		require.Contains(t, late.JSON409.Message, "expired")
		require.Equal(t, oc.ApprovalStatusExpired, approval(t, tm.dayo, res.JSON202.Data.Id).Status)
		expired := oc.ApprovalStatusExpired
		list, err := tm.dayo.ListApprovalsWithResponse(ctx, &oc.ListApprovalsParams{Status: &expired})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1)
		ops, err := tm.dayo.ListOperatorsWithResponse(ctx)
		require.NoError(t, err)
		for _, o := range ops.JSON200.Data {
			require.NotEqual(t, "Gbenga", o.Name, "never created")
		}
	})
}

// A new key made by an approved proposal is shown once, to the approver, in the
// approval's answer: the proposal keeps no secret, so no operator reads it later.
func TestApprovedKeyIsShownOnceAndNotKept(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"APPROVALS": "partner_key"})
		ctx := context.Background()
		partner := env.PartnerID(t, env.NewPartner(t))
		_, eze := env.NewOperatorWith(t, "Eze", operators.Admin)
		_, funmi := env.NewOperatorWith(t, "Funmi", operators.Admin)
		_, dayo := env.NewOperatorWith(t, "Dayo", operators.Viewer)
		res, err := env.OperatorClient(t, eze).CreatePartnerKeyWithResponse(ctx, partner, &oc.CreatePartnerKeyParams{IdempotencyKey: key()}, oc.EmptyRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, res.StatusCode(), string(res.Body))
		id := res.JSON202.Data.Id
		ok := approve(t, env.OperatorClient(t, funmi), id)
		require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))
		require.NotNil(t, ok.JSON200.Data.Result)
		data := (*ok.JSON200.Data.Result)["data"].(map[string]any)
		require.Regexp(t, `^sk_sandbox_`, data["key"], "the approver gets the new key")
		later := approval(t, env.OperatorClient(t, dayo), id)
		require.Equal(t, oc.ApprovalStatusApproved, later.Status)
		require.Nil(t, later.Result, "never kept")
		list, err := env.OperatorClient(t, dayo).ListApprovalsWithResponse(ctx, &oc.ListApprovalsParams{})
		require.NoError(t, err)
		require.NotContains(t, string(list.Body), data["key"].(string))
	})
}
