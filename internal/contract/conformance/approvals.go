package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"partnerd/gen/operatorclient"
)

// requiredRoles are the roles the operator key's operator must hold: the walk
// moves its own transactions through the lifecycle with the treasury actions.
// optionalRoles are checked as permitted when held, else as the 403 the
// operations needing them must answer.
var (
	requiredRoles = []operatorclient.OperatorRole{"treasury"}
	optionalRoles = []operatorclient.OperatorRole{"compliance", "admin"}
)

// findSelf returns the operator the operator key belongs to: the one with a
// working key whose prefix (the stored start of a key) starts the operator key.
// It reads GET /operators and each operator's keys until it finds it; nil when
// it could not (a problem is recorded: a key that authenticates is some
// operator's working key).
func (w *walk) findSelf(ctx context.Context) *operatorclient.Operator {
	ops, err := w.oc.ListOperatorsWithResponse(ctx)
	if !w.expect(w.o, "listOperators", ops, err, 200) {
		return nil
	}
	for _, o := range ops.JSON200.Data {
		keys, err := w.oc.ListOperatorKeysWithResponse(ctx, o.Id)
		if !w.expect(w.o, "listOperatorKeys", keys, err, 200) {
			return nil
		}
		for _, k := range keys.JSON200.Data {
			working := k.Status == operatorclient.ApiKeyStatusActive || k.Status == operatorclient.ApiKeyStatusExpiring
			if working && k.Prefix != "" && strings.HasPrefix(w.cfg.OperatorKey, k.Prefix) {
				return &o
			}
		}
	}
	w.o.problem("listOperatorKeys", "no operator listed has a working key with the operator key's prefix: the key's operator could not be found")
	return nil
}

// rolesSuffice refuses an operator key whose operator lacks a required role:
// the walk could not move its transactions, and every action would fail the
// run for the key's sake, not the deployment's. An operator listed without
// roles (which the contract does not allow) is left to the report.
func (w *walk) rolesSuffice() error {
	if w.self == nil || len(w.self.Roles) == 0 {
		return nil
	}
	var missing []string
	for _, r := range requiredRoles {
		if !slices.Contains(w.self.Roles, r) {
			missing = append(missing, string(r))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	held := make([]string, len(w.self.Roles))
	for i, r := range w.self.Roles {
		held[i] = string(r)
	}
	return fmt.Errorf("the operator key is %q's, who holds %s but not %s: the check needs an operator key holding treasury, "+
		"and compliance and admin to check every operation as permitted (partnerd operators create --name NAME --role admin,treasury,compliance)",
		w.self.Name, strings.Join(held, ","), strings.Join(missing, ","))
}

// lacks returns the role op needs (its x-operator-role) when the key's
// operator is known not to hold it, else "": op must then answer 403 forbidden.
func (w *walk) lacks(op string) string {
	role := operatorclient.OperatorRole(w.o.role[op])
	if w.self == nil || len(w.self.Roles) == 0 || role == "" || role == "viewer" || slices.Contains(w.self.Roles, role) {
		return ""
	}
	return string(role)
}

// expectError is expect for one refusal: op answered status with error code.
func (w *walk) expectError(op string, res answer, err error, status int, code string) bool {
	if !w.expect(w.o, op, res, err, status) {
		return false
	}
	if e := w.o.lastErrorBody(op); e == nil || e.Error.Code != code {
		w.o.problem(op, fmt.Sprintf("expected error code %s with status %d, got%s", code, status, w.o.lastError(op)))
		return false
	}
	return true
}

// expectRoleRefused checks op answered 403 forbidden naming role (the key's
// operator lacks it), and notes so.
func (w *walk) expectRoleRefused(op string, res answer, err error, role string) bool {
	if !w.expectError(op, res, err, 403, "forbidden") {
		return false
	}
	if !slices.Contains(w.o.lastErrorBody(op).Error.Details, errorDetail{Field: "role", Message: role}) {
		w.o.problem(op, fmt.Sprintf("403 forbidden without the missing role (%s) in details (field role)", role))
		return false
	}
	w.o.note(op, fmt.Sprintf("checked refused (403): the operator key lacks the %s role (a key holding it checks the operation as permitted)", role))
	return true
}

// expectAction is expect for an operation four eyes may hold (x-approval).
// Where the deployment's APPROVALS names its action, a request that passes the
// checks (key, role, validation) is answered 202 with a pending proposal
// instead of running: the walk checks it is the run's, withdraws it (nothing it
// proposes is left waiting) and reports held. ok is whether the answer was one
// of want.
func (w *walk) expectAction(ctx context.Context, op string, res answer, err error, want ...int) (ok, held bool) {
	action := w.o.approval[op]
	if action == "" || err != nil || res.StatusCode() != 202 {
		return w.expect(w.o, op, res, err, want...), false
	}
	w.holds++
	var body operatorclient.ApprovalResponse
	if jerr := json.Unmarshal(w.o.lastBody(op), &body); jerr != nil {
		w.o.problem(op, "the 202 answer is no proposal: "+jerr.Error())
		return false, true
	}
	p := body.Data
	w.o.note(op, fmt.Sprintf("held for a second operator (202): the deployment's APPROVALS names %s; the run withdrew its proposal", action))
	if p.Status != "pending" || p.Operation != op || string(p.Action) != action || p.RequiredRole != operatorclient.OperatorRole(w.o.role[op]) {
		w.o.problem(op, fmt.Sprintf("the proposal answered is %s, of %s (action %s, role %s): expected pending, of %s (action %s, role %s)",
			p.Status, p.Operation, p.Action, p.RequiredRole, op, action, w.o.role[op]))
	}
	if w.self != nil && p.ProposedBy.Id != w.self.Id {
		w.o.problem(op, "the proposal answered is not proposed by the key's operator")
	}
	w.withdraw(ctx, p.Id)
	return false, true
}

// expectActionError is expectAction for a refusal: where not held, op answered
// status with error code.
func (w *walk) expectActionError(ctx context.Context, op string, res answer, err error, status int, code string) (ok, held bool) {
	if ok, held = w.expectAction(ctx, op, res, err, status); !ok {
		return false, held
	}
	if e := w.o.lastErrorBody(op); e == nil || e.Error.Code != code {
		w.o.problem(op, fmt.Sprintf("expected error code %s with status %d, got%s", code, status, w.o.lastError(op)))
		return false, false
	}
	return true, false
}

// withdraw closes the run's own pending proposal id without running it. The
// first time, it checks on the way what four eyes promises: the proposer cannot
// approve it (403 forbidden), and once closed it can be neither approved nor
// rejected (409 approval_closed) and reads rejected, with the note.
func (w *walk) withdraw(ctx context.Context, id uuid.UUID) {
	first := !w.withdrew
	w.withdrew = true
	if first {
		own, err := w.oc.ApproveApprovalWithResponse(ctx, id, &operatorclient.ApproveApprovalParams{IdempotencyKey: idemKey()}, operatorclient.EmptyRequest{})
		if w.expectError("approveApproval", own, err, 403, "forbidden") {
			w.o.note("approveApproval", "checked refused (403): the proposer cannot approve their own proposal")
		}
	}
	note := "conformance check " + w.prefix + ": the run withdraws its own proposal"
	rej, err := w.oc.RejectApprovalWithResponse(ctx, id, &operatorclient.RejectApprovalParams{IdempotencyKey: idemKey()}, operatorclient.RejectRequest{Note: note})
	if !w.expect(w.o, "rejectApproval", rej, err, 200) {
		return
	}
	if d := rej.JSON200.Data; d.Id != id || d.Status != "rejected" || d.Note == nil || *d.Note != note || d.DecidedBy == nil {
		w.o.problem("rejectApproval", fmt.Sprintf("the withdrawn proposal reads %s (expected rejected, with the note and who decided)", d.Status))
	}
	if !first {
		return
	}
	got, err := w.oc.GetApprovalWithResponse(ctx, id)
	if w.expect(w.o, "getApproval", got, err, 200) && (got.JSON200.Data.Id != id || got.JSON200.Data.Status != "rejected") {
		w.o.problem("getApproval", fmt.Sprintf("the withdrawn proposal reads %s (expected rejected)", got.JSON200.Data.Status))
	}
	again, err := w.oc.ApproveApprovalWithResponse(ctx, id, &operatorclient.ApproveApprovalParams{IdempotencyKey: idemKey()}, operatorclient.EmptyRequest{})
	if w.expectError("approveApproval", again, err, 409, "approval_closed") {
		w.o.note("approveApproval", "checked refused (409 approval_closed): a withdrawn proposal")
	}
	rej, err = w.oc.RejectApprovalWithResponse(ctx, id, &operatorclient.RejectApprovalParams{IdempotencyKey: idemKey()}, operatorclient.RejectRequest{Note: note})
	if w.expectError("rejectApproval", rej, err, 409, "approval_closed") {
		w.o.note("rejectApproval", "checked refused (409 approval_closed): a proposal already withdrawn")
	}
}

// fourEyes reads the proposals (the newest, and the pending queue of one
// action), and reads, approves and rejects an unknown proposal (404): no one's
// proposal is decided.
func (w *walk) fourEyes(ctx context.Context) {
	list, err := w.oc.ListApprovalsWithResponse(ctx, &operatorclient.ListApprovalsParams{Limit: ptr(5)})
	w.expect(w.o, "listApprovals", list, err, 200)
	pending, payout := operatorclient.ApprovalStatus("pending"), operatorclient.ApprovalAction("payout")
	list, err = w.oc.ListApprovalsWithResponse(ctx, &operatorclient.ListApprovalsParams{Limit: ptr(5), Status: &pending, Action: &payout})
	if w.expect(w.o, "listApprovals", list, err, 200) {
		for _, a := range list.JSON200.Data.Data {
			if a.Status != pending || a.Action != payout {
				w.o.problem("listApprovals", fmt.Sprintf("status=pending&action=payout listed a proposal %s, of %s", a.Status, a.Action))
				break
			}
		}
	}
	unknown := uuid.New()
	got, err := w.oc.GetApprovalWithResponse(ctx, unknown)
	if w.expectError("getApproval", got, err, 404, "not_found") {
		w.o.note("getApproval", "checked with an unknown id (404)")
	}
	approve, err := w.oc.ApproveApprovalWithResponse(ctx, unknown, &operatorclient.ApproveApprovalParams{IdempotencyKey: idemKey()}, operatorclient.EmptyRequest{})
	if w.expectError("approveApproval", approve, err, 404, "not_found") {
		w.o.note("approveApproval", "checked with an unknown id (404)")
	}
	reject, err := w.oc.RejectApprovalWithResponse(ctx, unknown, &operatorclient.RejectApprovalParams{IdempotencyKey: idemKey()},
		operatorclient.RejectRequest{Note: "conformance check " + w.prefix})
	if w.expectError("rejectApproval", reject, err, 404, "not_found") {
		w.o.note("rejectApproval", "checked with an unknown id (404)")
	}
}

// operatorRoles sets roles without changing anyone's: an unknown operator's
// (404), and the key's own operator's to the roles they hold (403: no operator
// changes their own roles). Where the deployment holds operator changes for a
// second operator, each is a proposal, withdrawn. Without the admin role both
// are the 403 naming it.
func (w *walk) operatorRoles(ctx context.Context) {
	const op = "setOperatorRoles"
	if role := w.lacks(op); role != "" {
		res, err := w.oc.SetOperatorRolesWithResponse(ctx, uuid.New(), &operatorclient.SetOperatorRolesParams{IdempotencyKey: idemKey()},
			operatorclient.RolesRequest{Roles: operatorclient.OperatorRoles{"viewer"}})
		w.expectRoleRefused(op, res, err, role)
		return
	}
	res, err := w.oc.SetOperatorRolesWithResponse(ctx, uuid.New(), &operatorclient.SetOperatorRolesParams{IdempotencyKey: idemKey()},
		operatorclient.RolesRequest{Roles: operatorclient.OperatorRoles{"viewer"}})
	if ok, _ := w.expectActionError(ctx, op, res, err, 404, "not_found"); ok {
		w.o.note(op, "checked with an unknown operator (404)")
	}
	if w.self == nil || len(w.self.Roles) == 0 {
		return
	}
	// The roles they hold: were the refusal missing, nothing would change.
	res, err = w.oc.SetOperatorRolesWithResponse(ctx, w.self.Id, &operatorclient.SetOperatorRolesParams{IdempotencyKey: idemKey()},
		operatorclient.RolesRequest{Roles: w.self.Roles})
	if ok, _ := w.expectActionError(ctx, op, res, err, 403, "forbidden"); ok {
		w.o.note(op, "checked refused (403): an operator cannot change their own roles (the key's own, set to the roles they hold)")
	}
}
