package operatorapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"partnerd/gen/operatorapi"
	"partnerd/internal/audit/actor"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/approvals"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/httpkit"
	"partnerd/internal/kit/apperr"
)

// access is what one operation asks of its caller, read from the contract: the
// role it needs (x-operator-role), whether the operator its {id} names may call
// it on themself whatever their roles (x-operator-self), and the kind of action
// four eyes may hold for a second operator (x-approval, "" for none).
type access struct {
	id   string
	role operators.Role
	self bool
	// secret marks an operation whose answer holds a secret (x-secret-answer: a
	// new key): an approval shows it once and never keeps it.
	secret   bool
	approval approvals.Action
	summary  string
}

// accessOf reads every operation's access from the contract. An operation
// without a known role is an error: no operation is ever left unguarded.
func accessOf(spec *openapi3.T) (map[string]access, error) {
	out := map[string]access{}
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			role, _ := op.Extensions["x-operator-role"].(string)
			if !operators.Knows(operators.Role(role)) {
				return nil, fmt.Errorf("operation %s: x-operator-role %q is no role", op.OperationID, role)
			}
			id := httpkit.OperationID(op.OperationID)
			a := access{id: id, role: operators.Role(role), summary: op.Summary}
			a.self, _ = op.Extensions["x-operator-self"].(bool)
			a.secret, _ = op.Extensions["x-secret-answer"].(bool)
			if name, ok := op.Extensions["x-approval"].(string); ok {
				if _, err := approvals.ParseSet(name); err != nil {
					return nil, fmt.Errorf("operation %s: x-approval: %w", op.OperationID, err)
				}
				a.approval = approvals.Action(name)
			}
			out[id] = a
		}
	}
	return out, nil
}

// authorize refuses an operator without the role a needs (403 forbidden naming
// it), before the request is even checked: a refused role learns nothing of what
// the operation would have said.
func authorize(a access) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			o, err := operatorFrom(c.Request().Context())
			if err != nil {
				return err
			}
			if o.Has(a.role) || (a.self && c.Param("id") == o.ID.String()) {
				return next(c)
			}
			return operators.Forbidden(a.role)
		}
	}
}

// approvedRun is the run of a proposal its approver approved: the request is
// replayed through the operator API as the approver (authenticate takes the
// operator from here), and the action's audit row names the proposer too.
type approvedRun struct {
	approver *operators.Operator
	proposer uuid.UUID
}

type approvedRunKey struct{}

// approvedRunFrom is the approved proposal this request runs, nil for a request
// an operator sent.
func approvedRunFrom(ctx context.Context) *approvedRun {
	r, _ := ctx.Value(approvedRunKey{}).(*approvedRun)
	return r
}

// propose holds a request of an action that needs a second operator (four eyes)
// as a proposal, answered 202, instead of running it. It runs last, after
// authentication, the role, the request checks and validation: what is proposed
// is a request the action would take. The approver's replay of it passes.
func propose(a access, svc *approvals.Service) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			ctx := req.Context()
			if !svc.Needs(a.approval) || approvedRunFrom(ctx) != nil {
				return next(c)
			}
			o, err := operatorFrom(ctx)
			if err != nil {
				return err
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return err
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			path := strings.TrimPrefix(req.URL.Path, BasePath)
			p, replayed, err := svc.Propose(ctx, o, approvals.Proposal{Action: a.approval, Operation: a.id, Method: req.Method,
				Path: path, Body: body, Summary: summarize(a.summary, path, body), RequiredRole: a.role,
				IdempotencyKey: req.Header.Get("Idempotency-Key")})
			if err != nil {
				return err
			}
			if replayed {
				c.Response().Header().Set("Idempotent-Replayed", "true")
			}
			msg := "Proposed: a second operator holding the " + string(a.role) + " role must approve it."
			return c.JSON(http.StatusAccepted, operatorapi.ApprovalResponse{Success: true, Message: &msg, Data: approvalOut(p, svc)})
		}
	}
}

// summarize is a proposed request in words: the operation's summary, what its
// path names and each field sent, for the person who approves it.
func summarize(summary, path string, body []byte) string {
	var fields map[string]any
	_ = json.Unmarshal(body, &fields)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := fields[k]
		if list, ok := v.([]any); ok {
			v = fmt.Sprintf("%d item(s)", len(list))
		}
		parts = append(parts, fmt.Sprintf("%s %v", strings.ReplaceAll(k, "_", " "), v))
	}
	s := summary + " (" + path + ")"
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// approvalOut is a proposal as the contract shows it, its status read at the
// service's clock.
func approvalOut(a *approvals.Approval, svc *approvals.Service) operatorapi.Approval {
	status := a.StatusAt(svc.Now())
	params := map[string]any{}
	_ = json.Unmarshal(a.Body, &params)
	out := operatorapi.Approval{Id: a.ID, Action: operatorapi.ApprovalAction(a.Action), Operation: a.Operation, Method: a.Method,
		Path: a.Path, Parameters: params, Summary: a.Summary, RequiredRole: operatorapi.OperatorRole(a.RequiredRole),
		Status: operatorapi.ApprovalStatus(status), ProposedBy: operatorapi.OperatorRef{Id: a.ProposedBy, Name: a.ProposerName},
		ProposedAt: a.ProposedAt, ExpiresAt: a.ExpiresAt, DecidedAt: a.DecidedAt, Note: a.Note}
	if a.DecidedBy != nil {
		out.DecidedBy = &operatorapi.OperatorRef{Id: *a.DecidedBy, Name: a.DeciderName}
	}
	if a.Failure != nil {
		var info operatorapi.ErrorInfo
		if json.Unmarshal(a.Failure, &info) == nil {
			out.Failure = &info
		}
	}
	if a.Result != nil {
		var result map[string]any
		if json.Unmarshal(a.Result, &result) == nil {
			out.Result = &result
		}
	}
	return out
}

// ListApprovals is GET /approvals.
func (s *Server) ListApprovals(ctx context.Context, req operatorapi.ListApprovalsRequestObject) (operatorapi.ListApprovalsResponseObject, error) {
	q := req.Params
	limit, after := httpkit.PageParams(q.Limit, q.Cursor)
	var f approvals.Filter
	if q.Status != nil {
		st := approvals.Status(*q.Status)
		f.Status = &st
	}
	if q.Action != nil {
		act := approvals.Action(*q.Action)
		f.Action = &act
	}
	page, err := s.approvals.List(ctx, f, limit, after)
	if err != nil {
		return nil, err
	}
	items := make([]operatorapi.Approval, len(page.Items))
	for i, a := range page.Items {
		items[i] = approvalOut(a, s.approvals)
	}
	return operatorapi.ListApprovals200JSONResponse{Success: true, Data: operatorapi.ApprovalPage{
		Data: items, HasMore: page.HasMore, Limit: page.Limit, NextCursor: page.NextCursor}}, nil
}

// approvalOK is the answer with proposal a.
func (s *Server) approvalOK(a *approvals.Approval, msg string) operatorapi.ApprovalOKJSONResponse {
	return operatorapi.ApprovalOKJSONResponse{Body: operatorapi.ApprovalResponse{Success: true, Message: &msg, Data: approvalOut(a, s.approvals)}}
}

// GetApproval is GET /approvals/{id}.
func (s *Server) GetApproval(ctx context.Context, req operatorapi.GetApprovalRequestObject) (operatorapi.GetApprovalResponseObject, error) {
	a, err := s.approvals.Get(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return operatorapi.GetApproval200JSONResponse{ApprovalOKJSONResponse: s.approvalOK(a, "The proposal.")}, nil
}

// ApproveApproval is POST /approvals/{id}/approve: the action runs now, as the
// caller, replayed through this API's own route (so it is the very use case it
// always is, with its checks, its unit of work and its idempotency key, the
// proposal's), and the proposal records its answer.
func (s *Server) ApproveApproval(ctx context.Context, req operatorapi.ApproveApprovalRequestObject) (operatorapi.ApproveApprovalResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.approvals.Get(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	run, err := s.approvals.Claim(ctx, o, a)
	if err != nil {
		return nil, err
	}
	if !run {
		return operatorapi.ApproveApproval200JSONResponse{ApprovalOKJSONResponse: s.approvalOK(a, "Approved.")}, nil
	}
	status, body := s.replay(ctx, o, a)
	switch {
	case status >= 200 && status < 300:
		kept := body
		if s.access[a.Operation].secret {
			kept = nil // a new key: shown to the approver now, never kept
		}
		done, err := s.approvals.Finish(ctx, o, a, kept, nil)
		if err != nil {
			return nil, err
		}
		ok := s.approvalOK(done, "Approved: the action ran.")
		if kept == nil {
			var result map[string]any
			if json.Unmarshal(body, &result) == nil {
				ok.Body.Data.Result = &result
			}
		}
		return operatorapi.ApproveApproval200JSONResponse{ApprovalOKJSONResponse: ok}, nil
	case status >= 500 || status == http.StatusTooManyRequests:
		// Not the action's refusal: the proposal stays the caller's to finish (their
		// retry replays the action under the proposal's key).
		return nil, refusalOf(status, body)
	default:
		failure := body
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != nil {
			failure = e.Error
		}
		if _, err := s.approvals.Finish(ctx, o, a, nil, failure); err != nil {
			return nil, err
		}
		return nil, refusalOf(status, body)
	}
}

// refusalOf is the action's error answer (status, body) as the error the
// approval answers with: the same code, message and details.
func refusalOf(status int, body []byte) error {
	var e operatorapi.Error
	if json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
		if status >= 500 {
			return apperr.New(apperr.ServiceUnavailable, "The action could not run now; approve again to finish it.")
		}
		return apperr.New(apperr.Internal, httpkit.InternalMessage)
	}
	out := &apperr.Error{Code: apperr.Code(e.Error.Code), Message: e.Message}
	for _, d := range e.Error.Details {
		out.Details = append(out.Details, apperr.Detail{Field: d.Field, Message: d.Message})
	}
	return out
}

// replay runs proposal a's request through this API as approver o and returns
// the answer's status and body.
func (s *Server) replay(ctx context.Context, o *operators.Operator, a *approvals.Approval) (int, []byte) {
	ctx = context.WithValue(ctx, approvedRunKey{}, &approvedRun{approver: o, proposer: a.ProposedBy})
	req, err := http.NewRequestWithContext(ctx, a.Method, BasePath+a.Path, bytes.NewReader(a.Body))
	if err != nil {
		return http.StatusInternalServerError, nil
	}
	req.RemoteAddr = "127.0.0.1:0"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "approval-"+a.ID.String())
	w := &recorder{header: http.Header{}}
	s.serve(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.status, w.body.Bytes()
}

// recorder keeps a replayed request's answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// RejectApproval is POST /approvals/{id}/reject.
func (s *Server) RejectApproval(ctx context.Context, req operatorapi.RejectApprovalRequestObject) (operatorapi.RejectApprovalResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.approvals.Get(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	done, err := s.approvals.Reject(ctx, o, a, req.Body.Note)
	if err != nil {
		return nil, err
	}
	return operatorapi.RejectApproval200JSONResponse{ApprovalOKJSONResponse: s.approvalOK(done, "Rejected.")}, nil
}

// SetOperatorRoles is PUT /operators/{id}/roles.
func (s *Server) SetOperatorRoles(ctx context.Context, req operatorapi.SetOperatorRolesRequestObject) (operatorapi.SetOperatorRolesResponseObject, error) {
	by, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(req.Body.Roles))
	for i, r := range req.Body.Roles {
		names[i] = string(r)
	}
	roles, err := operators.CheckRoles(names)
	if err != nil {
		return nil, err
	}
	answer := func(o *operators.Operator) operatorapi.SetOperatorRolesResponseObject {
		msg := "Roles set."
		return operatorapi.SetOperatorRoles200JSONResponse{Body: operatorapi.OperatorResponse{Success: true, Message: &msg, Data: accountOut(o)}}
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, operatorapi.SetOperatorRolesResponseObject.VisitSetOperatorRolesResponse)
	o, err := s.actions.SetRoles(ctx, key, actorOf(ctx, by), req.Id, roles)
	if err != nil {
		return nil, err
	}
	return answer(o), nil
}

// accountOut is an operator as the contract shows one.
func accountOut(o *operators.Operator) operatorapi.Operator {
	roles := make([]operatorapi.OperatorRole, len(o.Roles))
	for i, r := range o.Roles {
		roles[i] = operatorapi.OperatorRole(r)
	}
	return operatorapi.Operator{Id: o.ID, Name: o.Name, Roles: roles, CreatedAt: o.CreatedAt}
}

// actorOf is the authenticated operator o as the use cases take who acts: when
// the request is an approved proposal's run, o approved what its proposer proposed.
func actorOf(ctx context.Context, o *operators.Operator) actor.Actor {
	a := actor.OfOperator(o.ID, o.Name)
	if run := approvedRunFrom(ctx); run != nil {
		a = a.Approved(run.proposer)
	}
	return a
}
