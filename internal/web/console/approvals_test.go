package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// Four eyes in Chromium, with APPROVALS=payout and two treasury operators in two
// browsers: Ada's batch payout is only proposed (the console says it waits for a
// second operator; nothing is paid), Ada cannot approve her own proposal (the
// refusal in words), Grace finds it in the queue with Ada's name and its summary
// and approves it through the confirmation step (the payout is recorded, the
// decided list names both). A single payout from the transaction page is
// proposed the same way and rejected with a note; a proposal decided meanwhile
// and one whose action the state no longer allows are refused in words.
func TestConsoleApprovalsInChromium(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { approvalsFlow(t, db) })
	}
}

func approvalsFlow(t *testing.T, db testdb.Database) {
	env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator", "APPROVALS": "payout"})
	partnerKey := env.NewPartner(t)
	pc := env.Client(t, partnerKey)
	partnerID := env.PartnerID(t, partnerKey)
	adaID, adaKey := env.NewOperatorWith(t, "Ada", operators.Treasury)
	_, graceKey := env.NewOperatorWith(t, "Grace", operators.Treasury)
	ada, grace := env.OperatorClient(t, adaKey), env.OperatorClient(t, graceKey)
	base := env.Root + "/console"
	bg := context.Background()

	// Three transactions completed (fills and settlements need no second
	// operator here), awaiting their payout.
	var txs []client.Transaction
	for i, fiat := range []string{"3000.00", "4500.50", "1200.00"} {
		tx := create(t, pc, "FOUR-EYES-"+uuid.NewString()[:8], fiat)
		confirmed(t, env, tx.Id, "0x"+strings.Repeat(string("fed"[i]), 64))
		completeThroughAPI(t, ada, tx)
		txs = append(txs, tx)
	}

	// Ada records a batch payout of the first two: it is only proposed.
	actx := webtest.Browser(t)
	signIn(t, actx, base, adaKey)
	require.NoError(t, chromedp.Run(actx, chromedp.Navigate(base+"/payouts/new?partner_id="+partnerID.String()),
		chromedp.WaitVisible("#batch", chromedp.ByID)))
	for _, tx := range txs[:2] {
		require.NoError(t, chromedp.Run(actx, chromedp.Click(`input[value="`+tx.Id.String()+`"]`, chromedp.ByQuery)))
	}
	var text string
	require.NoError(t, chromedp.Run(actx,
		chromedp.SendKeys("#batch-ref", "NIP-4EYES-1", chromedp.ByID),
		chromedp.SendKeys("#batch-amount", "7500.50", chromedp.ByID),
		chromedp.Click("#batch-submit", chromedp.ByID),
		chromedp.WaitVisible("#confirm", chromedp.ByID)))
	webtest.RequirePostRedirectGet(t, actx, webtest.Follow("#confirm"), chromedp.Text("#notice", &text, chromedp.ByID))
	require.Contains(t, text, "Sent for approval: a second operator with the treasury role must approve it.")
	require.Contains(t, text, "NIP-4EYES-1", "the notice says what was proposed")

	// Nothing is paid yet; the proposal is Ada's, pending.
	require.Empty(t, payouts(t, ada), "nothing paid before a second operator approves")
	require.Equal(t, 3, awaitingPayout(t, ada))
	pending := approvalsOf(t, ada, oc.ApprovalStatusPending)
	require.Len(t, pending, 1)
	batch := pending[0]
	require.Equal(t, "Ada", batch.ProposedBy.Name)
	require.Equal(t, adaID, batch.ProposedBy.Id)
	require.Equal(t, oc.ApprovalActionPayout, batch.Action)
	row := "#approval-" + batch.Id.String()
	require.NoError(t, chromedp.Run(actx, chromedp.Text(row, &text, chromedp.ByQuery)))
	require.Contains(t, text, "(you)", "Ada's own proposal is marked")
	require.Contains(t, text, "Withdraw", "its proposer may withdraw it")

	// Ada approving her own proposal: refused in words (403), still pending.
	require.NoError(t, chromedp.Run(actx, chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible(row, chromedp.ByQuery),
		webtest.Follow(row+" button.approve"), chromedp.Text("#subject", &text, chromedp.ByID)))
	require.Contains(t, text, "proposed by Ada")
	require.NoError(t, chromedp.Run(actx, webtest.Follow("#confirm"), chromedp.Text("#problem", &text, chromedp.ByID)))
	require.Contains(t, text, "its proposer cannot approve it")
	require.NotContains(t, text, "HTTP 403", "the words first; the status folded beneath them")
	require.NoError(t, chromedp.Run(actx, chromedp.TextContent("#problem details code", &text, chromedp.ByQuery)))
	require.Equal(t, "forbidden, HTTP 403", text)
	require.Equal(t, oc.ApprovalStatusPending, approvalOf(t, ada, batch.Id).Status)
	require.Empty(t, payouts(t, ada))

	// Grace, in a browser of her own, opens the queue from the header: Ada's
	// proposal with its summary; she approves it through the confirmation step.
	gctx := webtest.Browser(t)
	signIn(t, gctx, base, graceKey)
	require.NoError(t, chromedp.Run(gctx, webtest.Follow("#nav-approvals"), chromedp.Text(row, &text, chromedp.ByQuery)))
	require.Contains(t, text, "Ada")
	require.Contains(t, text, batch.Summary)
	require.NotContains(t, text, "(you)")
	var rows int
	require.NoError(t, chromedp.Run(gctx, chromedp.Evaluate(`document.querySelectorAll('#approvals tbody tr').length`, &rows)))
	require.Equal(t, 1, rows)
	webtest.Shot(t, gctx, "approvals.png")
	require.NoError(t, chromedp.Run(gctx, webtest.Follow(row+" button.approve"), chromedp.Text("h1", &text, chromedp.ByQuery)))
	require.Contains(t, text, "Approve the proposal")
	webtest.RequirePostRedirectGet(t, gctx, webtest.Follow("#confirm"), chromedp.Text("#notice", &text, chromedp.ByID))
	require.Contains(t, text, "Approved: the action ran")
	require.Contains(t, text, "proposed by Ada, approved by Grace")

	// The payout is recorded, as Grace's approval of Ada's proposal.
	paid := payouts(t, grace)
	require.Len(t, paid, 1)
	require.Equal(t, "NIP-4EYES-1", paid[0].Reference)
	require.ElementsMatch(t, []uuid.UUID{txs[0].Id, txs[1].Id}, paid[0].TransactionIds)
	require.Equal(t, 1, awaitingPayout(t, grace))
	done := approvalOf(t, grace, batch.Id)
	require.Equal(t, oc.ApprovalStatusApproved, done.Status)
	require.NotNil(t, done.DecidedBy)
	require.Equal(t, "Grace", done.DecidedBy.Name)

	// The decided list (where the approval redirected) shows both names.
	require.NoError(t, chromedp.Run(gctx, chromedp.Text(row, &text, chromedp.ByQuery)))
	require.Contains(t, text, "proposed by Ada, approved by Grace")
	require.Contains(t, text, "approved")
	require.NoError(t, chromedp.Run(gctx, chromedp.Navigate(base+"/approvals"), chromedp.Text("#empty", &text, chromedp.ByID)))
	require.Contains(t, text, "No proposal waits for a second operator")

	// Ada's page still offers the proposal Grace approved meanwhile: refused in
	// words (409 approval_closed).
	require.NoError(t, chromedp.Run(actx, webtest.Follow(row+" button.approve"), chromedp.WaitVisible("#confirm", chromedp.ByID),
		webtest.Follow("#confirm"), chromedp.Text("#problem", &text, chromedp.ByID)))
	require.Contains(t, text, "no longer pending")
	require.NoError(t, chromedp.Run(actx, chromedp.TextContent("#problem details code", &text, chromedp.ByQuery)))
	require.Equal(t, "approval_closed, HTTP 409", text)
	require.Len(t, payouts(t, ada), 1, "paid once")

	// A single payout from the transaction page is proposed the same way; Grace
	// rejects it with a note, nothing paid.
	single := txs[2]
	require.NoError(t, chromedp.Run(actx, chromedp.Navigate(base+"/transactions/"+single.Id.String()),
		chromedp.SendKeys("#payout-ref", "NIP-4EYES-2", chromedp.ByID), chromedp.Click("#payout", chromedp.ByID),
		chromedp.WaitVisible("#confirm", chromedp.ByID), webtest.Follow("#confirm"), chromedp.Text("#notice", &text, chromedp.ByID)))
	require.Contains(t, text, "Sent for approval: a second operator with the treasury role must approve it.")
	pending = approvalsOf(t, grace, oc.ApprovalStatusPending)
	require.Len(t, pending, 1)
	rejected := pending[0]
	row = "#approval-" + rejected.Id.String()
	require.NoError(t, chromedp.Run(gctx, chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.SendKeys(row+` input[name="note"]`, "The bank statement shows no such transfer.", chromedp.ByQuery),
		webtest.Follow(row+" button.reject"), chromedp.Text("h1", &text, chromedp.ByQuery)))
	require.Contains(t, text, "Reject the proposal")
	require.NoError(t, chromedp.Run(gctx, webtest.Follow("#confirm"), chromedp.Text("#notice", &text, chromedp.ByID)))
	require.Contains(t, text, "Rejected: nothing was done")
	require.NoError(t, chromedp.Run(gctx, chromedp.Text(row, &text, chromedp.ByQuery)))
	require.Contains(t, text, "proposed by Ada, rejected by Grace")
	require.Contains(t, text, "The bank statement shows no such transfer.")
	require.Equal(t, oc.ApprovalStatusRejected, approvalOf(t, grace, rejected.Id).Status)
	require.Len(t, payouts(t, grace), 1, "the rejected payout is not recorded")

	// Two proposals to pay the same transaction: once the first is approved, the
	// second's action is refused when Grace approves it (409, in words), and it
	// is listed as failed.
	first, second := proposeSinglePayout(t, ada, single.Id, "NIP-4EYES-3"), proposeSinglePayout(t, ada, single.Id, "NIP-4EYES-4")
	require.NoError(t, chromedp.Run(gctx, chromedp.Navigate(base+"/approvals"),
		chromedp.WaitVisible("#approval-"+second.String(), chromedp.ByQuery)))
	ok, err := grace.ApproveApprovalWithResponse(bg, first, &oc.ApproveApprovalParams{IdempotencyKey: uuid.NewString()}, make(oc.EmptyRequest))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))
	row = "#approval-" + second.String()
	require.NoError(t, chromedp.Run(gctx, webtest.Follow(row+" button.approve"), chromedp.WaitVisible("#confirm", chromedp.ByID),
		webtest.Follow("#confirm"), chromedp.Text("#problem", &text, chromedp.ByID)))
	require.NoError(t, chromedp.Run(gctx, chromedp.TextContent("#problem details code", &text, chromedp.ByQuery)))
	require.Equal(t, "invalid_state_transition, HTTP 409", text)
	require.Equal(t, oc.ApprovalStatusFailed, approvalOf(t, grace, second).Status)
	require.NoError(t, chromedp.Run(gctx, chromedp.Navigate(base+"/approvals?status=failed"), chromedp.Text(row, &text, chromedp.ByQuery)))
	require.Contains(t, text, "refused when approved")
	require.Contains(t, text, "invalid state transition")
	require.Contains(t, text, "proposed by Ada")
	require.Len(t, payouts(t, grace), 2, "the single payout, once")

	// The operators page shows each operator's roles; the queue holds on a phone.
	require.NoError(t, chromedp.Run(gctx, chromedp.Navigate(base+"/operators"), chromedp.Text("#operators", &text, chromedp.ByID)))
	require.Contains(t, text, "treasury")
	webtest.RequireOnScreen(t, gctx, 390, base+"/approvals?status=approved")
}

// payouts lists the recorded payouts through the operator API.
func payouts(t *testing.T, ops *oc.ClientWithResponses) []oc.Batch {
	t.Helper()
	res, err := ops.ListPayoutsWithResponse(context.Background(), &oc.ListPayoutsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data.Data
}

// awaitingPayout counts the transactions awaiting their payout.
func awaitingPayout(t *testing.T, ops *oc.ClientWithResponses) int {
	t.Helper()
	res, err := ops.ListStageWithResponse(context.Background(), &oc.ListStageParams{Stage: ptr(oc.StageAwaitingPayout)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return len(res.JSON200.Data.Data)
}

// approvalsOf lists the proposals in status through the operator API.
func approvalsOf(t *testing.T, ops *oc.ClientWithResponses, status oc.ApprovalStatus) []oc.Approval {
	t.Helper()
	res, err := ops.ListApprovalsWithResponse(context.Background(), &oc.ListApprovalsParams{Status: &status})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data.Data
}

// approvalOf is proposal id through the operator API.
func approvalOf(t *testing.T, ops *oc.ClientWithResponses, id uuid.UUID) oc.Approval {
	t.Helper()
	res, err := ops.GetApprovalWithResponse(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data
}

// proposeSinglePayout proposes the payout of transaction id through the
// operator API (answered 202) and returns the proposal's id.
func proposeSinglePayout(t *testing.T, ops *oc.ClientWithResponses, id uuid.UUID, ref string) uuid.UUID {
	t.Helper()
	res, err := ops.SettlePayoutWithResponse(context.Background(), id, &oc.SettlePayoutParams{IdempotencyKey: uuid.NewString()},
		oc.ReferenceRequest{Reference: ref})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, res.StatusCode(), string(res.Body))
	return res.JSON202.Data.Id
}
