// Package conformance checks a running deployment against its contracts, as a QA
// team would before relying on it: it exercises every operation of the partner
// contract (and, given an operator key, of the operator contract) through the
// generated typed clients, checks every answer (status declared, headers, body)
// with internal/contract/contractcheck, and reports each operation as passed, failed or
// skipped with why. No operation of either contract is left out of the report.
//
// It is safe against a shared sandbox: it changes only transactions it creates
// (their merchant references start with a prefix unique to the run), drives them
// with the sandbox simulator and the operator actions, and leaves the partner's
// webhook endpoint alone unless asked. Partner and operator accounts and keys are
// never changed (those operations are reported as skipped): an operator's roles
// are checked with requests that change none (an unknown operator, 404; the
// key's own operator, 403, as no operator may change their own roles), and the
// proposals (four eyes) with an unknown one (404). Where the deployment's
// APPROVALS holds an action for a second operator (202), the run withdraws its
// own proposal, checking on the way that its proposer cannot approve it (403)
// and that a closed proposal is approval_closed (409): nothing the run proposes
// is left waiting, and nothing runs on one pair of eyes.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/contract/contractcheck"
	"partnerd/internal/httpapi"
	"partnerd/internal/operatorapi"
)

// Config says which deployment to check and how far to go.
type Config struct {
	// BaseURL is the deployment's root, http(s)://HOST[:PORT]; the partner API's
	// base address (…/api/v1/partner) is accepted too.
	BaseURL string
	// APIKey is a sandbox partner key (the simulator is needed to walk
	// transactions through their lifecycle).
	APIKey string
	// OperatorKey, when set, also checks the operator API: every read, and the
	// actions on the run's own transactions. Its operator must hold the treasury
	// role (the actions that walk the run's transactions; Run refuses a key
	// without it), and should hold compliance and admin too: without one of them,
	// the operations needing it (a screening decision; an operator's roles) are
	// checked as the 403 forbidden they must then answer, not as permitted. A key
	// made with `partnerd operators create --name NAME --role
	// admin,treasury,compliance` checks everything.
	OperatorKey string
	// IncludeWebhooks puts the partner's webhook endpoint back as it found it
	// (same URL and enabled flag), exercising PUT /webhooks/endpoint; without it
	// the endpoint is only read.
	IncludeWebhooks bool
	// RotateWebhookSecret rotates the endpoint's signing secret, which cannot be
	// undone (the previous secret keeps signing beside the new one for 24 hours).
	// The new secret is handed to OnNewSecret.
	RotateWebhookSecret bool
	OnNewSecret         func(secret string)
	// Prefix starts every merchant reference the run creates; a unique run id is
	// appended. Default "conformance-".
	Prefix string
	// Transport sends the requests (http.DefaultTransport when nil).
	Transport http.RoundTripper
	// Timeout bounds each request (default 30 s).
	Timeout time.Duration
}

// Run checks the deployment and returns the report; an error means the check
// could not run at all (a bad setting), never that the deployment failed it.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	root, err := rootURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.APIKey == "" {
		return nil, errors.New("an API key (a sandbox partner key) is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "conformance-"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	runID := make([]byte, 4)
	_, _ = rand.Read(runID)
	prefix := cfg.Prefix + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(runID) + "-"

	partnerCheck, err := contractcheck.Partner(contractcheck.Closed)
	if err != nil {
		return nil, err
	}
	operatorCheck, err := contractcheck.Operator(contractcheck.Closed)
	if err != nil {
		return nil, err
	}
	p := newRecorder("partner", partnerCheck, httpapi.BasePath)
	o := newRecorder("operator", operatorCheck, operatorapi.BasePath)

	pc, err := client.NewClientWithResponses(root+httpapi.BasePath,
		client.WithHTTPClient(p.httpClient(cfg)), client.WithRequestEditorFn(apiKey(cfg.APIKey)))
	if err != nil {
		return nil, err
	}
	w := &walk{cfg: cfg, prefix: prefix, p: p, o: o, pc: pc, started: time.Now().UTC().Add(-time.Minute)}
	if cfg.OperatorKey != "" {
		w.oc, err = operatorclient.NewClientWithResponses(root+operatorapi.BasePath,
			operatorclient.WithHTTPClient(o.httpClient(cfg)), operatorclient.WithRequestEditorFn(apiKey(cfg.OperatorKey)))
		if err != nil {
			return nil, err
		}
		w.self = w.findSelf(ctx)
		if err := w.rolesSuffice(); err != nil {
			return nil, err
		}
	} else {
		o.skipAll("no --operator-key given: the operator API was not checked")
	}
	w.run(ctx)

	rep := &Report{BaseURL: root, Prefix: prefix}
	failed := p.failed() || o.failed()
	for _, rec := range []*recorder{p, o} {
		rep.Results = append(rep.Results, rec.results(failed)...)
	}
	for _, r := range rep.Results {
		switch r.Outcome {
		case Pass:
			rep.Passed++
		case Fail:
			rep.Failed++
		default:
			rep.Skipped++
		}
	}
	return rep, nil
}

// rootURL returns the deployment's root from the given base URL.
func rootURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base URL %q: want http(s)://HOST[:PORT]", base)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, httpapi.BasePath), operatorapi.BasePath)
	if u.Path != "" {
		return "", fmt.Errorf("base URL %q: want the deployment's root, http(s)://HOST[:PORT] (the APIs are under %s and %s)", base, httpapi.BasePath, operatorapi.BasePath)
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

func apiKey(key string) func(context.Context, *http.Request) error {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("X-API-KEY", key)
		return nil
	}
}

// recorder keeps what happened to each operation of one contract.
type recorder struct {
	api   string
	check *contractcheck.Checker
	// role and approval are each operation's x-operator-role and x-approval
	// (the operator contract's: the role it needs, and the action four eyes
	// may hold for a second operator), "" where it has none.
	role, approval map[string]string
	mu             sync.Mutex
	ops            map[string]*Result
	// last is the last answer's body per operation, to quote in a problem.
	last map[string][]byte
	// strays are violations in answers to requests that matched no operation.
	strays []string
}

func newRecorder(api string, check *contractcheck.Checker, base string) *recorder {
	r := &recorder{api: api, check: check, ops: map[string]*Result{}, last: map[string][]byte{},
		role: map[string]string{}, approval: map[string]string{}}
	for path, item := range check.Spec().Paths.Map() {
		for method, op := range item.Operations() {
			id := check.OperationOf(method, path)
			r.ops[id] = &Result{API: api, Operation: id, Method: method, Path: strings.TrimPrefix(path, base), Statuses: []int{}}
			r.role[id], _ = op.Extensions["x-operator-role"].(string)
			r.approval[id], _ = op.Extensions["x-approval"].(string)
		}
	}
	return r
}

// httpClient returns a client whose every answer is checked and recorded.
func (r *recorder) httpClient(cfg Config) *http.Client {
	checked := &contractcheck.Transport{Checker: r.check, Next: cfg.Transport, Observe: r.observe}
	const tries, maxWait = 3, 10 * time.Second
	return &http.Client{Timeout: tries*cfg.Timeout + (tries-1)*maxWait, Transport: &patient{next: checked, tries: tries, maxWait: maxWait}}
}

func (r *recorder) observe(x contractcheck.Exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.ops[x.Operation]
	if res == nil {
		if x.Err != nil {
			r.strays = append(r.strays, fmt.Sprintf("%s %s: %v", x.Request.Method, x.Request.URL.Path, x.Err))
		}
		return
	}
	res.Calls++
	if !slices.Contains(res.Statuses, x.Response.StatusCode) {
		res.Statuses = append(res.Statuses, x.Response.StatusCode)
	}
	r.last[x.Operation] = x.Body
	for _, line := range contractcheck.Describe(x.Err) {
		v := fmt.Sprintf("status %d: %s", x.Response.StatusCode, line)
		if !slices.Contains(res.Violations, v) {
			res.Violations = append(res.Violations, v)
		}
	}
}

// problem records an answer the walk did not expect for op.
func (r *recorder) problem(op, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[op].Problems = append(r.ops[op].Problems, msg)
}

// note records what op's answers mean, once.
func (r *recorder) note(op, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.ops[op].Notes, msg) {
		r.ops[op].Notes = append(r.ops[op].Notes, msg)
	}
}

// skip records why op is not exercised.
func (r *recorder) skip(op, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[op].Reason = reason
}

func (r *recorder) skipAll(reason string) {
	for op := range r.ops {
		r.skip(op, reason)
	}
}

// lastError returns the error code and message of op's last answer, if it was one.
func (r *recorder) lastError(op string) string {
	e := r.lastErrorBody(op)
	if e == nil {
		return ""
	}
	return ": " + e.Error.Code + " (" + e.Message + ")"
}

// errorBody is the part of an Error body the walk reads.
type errorBody struct {
	Message string `json:"message"`
	Error   struct {
		Code    string        `json:"code"`
		Details []errorDetail `json:"details"`
	} `json:"error"`
}

type errorDetail struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// lastErrorBody returns op's last answer as an Error body, or nil when it was none.
func (r *recorder) lastErrorBody(op string) *errorBody {
	var e errorBody
	if json.Unmarshal(r.lastBody(op), &e) != nil || e.Error.Code == "" {
		return nil
	}
	return &e
}

// lastBody returns the body of op's last answer.
func (r *recorder) lastBody(op string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[op]
}

// failed reports whether any answer broke the contract or surprised the walk.
func (r *recorder) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.strays) > 0 {
		return true
	}
	for _, res := range r.ops {
		if len(res.Violations) > 0 || len(res.Problems) > 0 {
			return true
		}
	}
	return false
}

// results returns every operation's result, ordered by path: an operation
// exercised with no violation or problem passes; one with either fails; one
// never exercised is skipped with its reason. One with no reason was not reached
// because an earlier step failed (runFailed; that step's failure fails the run),
// or, when nothing failed, was forgotten by the walk: it fails, so an operation
// never passes unchecked in silence.
func (r *recorder) results(runFailed bool) []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Result, 0, len(r.ops))
	for _, res := range r.ops {
		switch {
		case len(res.Violations) > 0 || len(res.Problems) > 0:
			res.Outcome = Fail
		case res.Calls > 0:
			res.Outcome, res.Reason = Pass, ""
		case res.Reason != "":
			res.Outcome = Skip
		case runFailed:
			res.Outcome, res.Reason = Skip, "not reached: a step it needs failed (see the failures)"
		default:
			res.Outcome = Fail
			res.Problems = append(res.Problems, "not exercised: the check has no step for it")
		}
		out = append(out, *res)
	}
	order := pathOrder(r.check)
	slices.SortFunc(out, func(a, b Result) int {
		if c := order[a.Operation] - order[b.Operation]; c != 0 {
			return c
		}
		return strings.Compare(a.Operation, b.Operation)
	})
	if len(r.strays) > 0 {
		out = append(out, Result{API: r.api, Operation: "(no operation)", Method: "-", Path: "-", Outcome: Fail, Statuses: []int{}, Violations: r.strays})
	}
	return out
}

// pathOrder ranks the contract's operations by path, then method, so related
// operations sit together in the report.
func pathOrder(check *contractcheck.Checker) map[string]int {
	rank := map[string]int{}
	spec := check.Spec()
	paths := spec.Paths.InMatchingOrder()
	slices.Sort(paths)
	for _, p := range paths {
		item := spec.Paths.Value(p)
		methods := make([]string, 0)
		for m := range item.Operations() {
			methods = append(methods, m)
		}
		slices.Sort(methods)
		for _, m := range methods {
			rank[check.OperationOf(m, p)] = len(rank)
		}
	}
	return rank
}
