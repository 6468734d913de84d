package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/approvals"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/contract/contractcheck"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// A freshly started service conforms: every operation of both contracts is in
// the report, each passes but those the check documents it never calls, the
// webhook endpoint is put back as found, and nothing but the run's own
// transactions changes.
func TestFreshServiceConforms(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			env := apitest.Start(t, db, nil)
			_, key, err := env.App.EnsureDemoPartner(ctx)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(key, "sk_sandbox_"), "the demo partner's sandbox key")
			opKey := env.NewOperator(t)
			c := env.Client(t, key)

			// An endpoint to put back, and a transaction made before the run that
			// the run must not touch.
			put, err := c.PutWebhookEndpointWithResponse(ctx, &client.PutWebhookEndpointParams{},
				client.WebhookEndpointRequest{Url: "http://127.0.0.1:9/hooks", Enabled: false})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, put.StatusCode(), string(put.Body))
			before, err := c.CreateTransactionWithResponse(ctx, &client.CreateTransactionParams{IdempotencyKey: "before-the-run"},
				client.CreateTransactionRequest{MerchantReference: "ORDER-BEFORE", CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("30000")})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, before.StatusCode(), string(before.Body))
			start := time.Now().UTC().Add(-time.Minute)

			var secret string
			rep, err := Run(ctx, Config{BaseURL: env.Root, APIKey: key, OperatorKey: opKey,
				IncludeWebhooks: true, RotateWebhookSecret: true, OnNewSecret: func(s string) { secret = s }})
			require.NoError(t, err)
			requireOK(t, rep)
			requireCoversContracts(t, rep)
			var text bytes.Buffer
			require.NoError(t, rep.WriteText(&text))
			t.Log("\n" + text.String())
			for _, r := range rep.Results {
				if reason, never := neverCalled[r.API][r.Operation]; never {
					require.Equal(t, Skip, r.Outcome, r.Operation)
					require.Equal(t, reason, r.Reason)
					continue
				}
				require.Equal(t, Pass, r.Outcome, "%s %s: %+v", r.API, r.Operation, r)
				require.Positive(t, r.Calls)
			}
			require.True(t, strings.HasPrefix(secret, "whsec_"), "the rotated secret is handed over")
			// Roles and proposals are checked without changing any: an unknown
			// operator and proposal (404), the key's own roles (403).
			require.ElementsMatch(t, []int{404, 403}, rep.Result("operator", "setOperatorRoles").Statuses)
			for _, op := range []string{"getApproval", "approveApproval", "rejectApproval"} {
				require.Equal(t, []int{404}, rep.Result("operator", op).Statuses, op)
			}

			// The endpoint is as found.
			got, err := c.GetWebhookEndpointWithResponse(ctx)
			require.NoError(t, err)
			require.Equal(t, "http://127.0.0.1:9/hooks", got.JSON200.Data.Url)
			require.False(t, got.JSON200.Data.Enabled)
			// The transaction made before is untouched, and every other one is the run's.
			after, err := c.GetTransactionWithResponse(ctx, before.JSON201.Data.Id)
			require.NoError(t, err)
			require.Equal(t, client.TransactionStatus("awaiting_deposit"), after.JSON200.Data.Status)
			require.Len(t, apitest.History(t, c, before.JSON201.Data.Id).History, 1, "no change but its creation")
			list, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{From: &start, Limit: ptr(100)})
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(list.JSON200.Data.Data), 8)
			for _, tx := range list.JSON200.Data.Data {
				if tx.Id == before.JSON201.Data.Id {
					continue
				}
				require.True(t, strings.HasPrefix(tx.MerchantReference, rep.Prefix), tx.MerchantReference)
			}

			// Without an operator key the operator API is skipped, each operation
			// with why, and the partner API still passes; a second run on the same
			// deployment makes its own references.
			rep2, err := Run(ctx, Config{BaseURL: env.Root + "/api/v1/partner", APIKey: key})
			require.NoError(t, err)
			requireOK(t, rep2)
			requireCoversContracts(t, rep2)
			require.NotEqual(t, rep.Prefix, rep2.Prefix)
			for _, r := range rep2.Results {
				switch {
				case r.API == "operator":
					require.Equal(t, Skip, r.Outcome)
					require.Contains(t, r.Reason, "--operator-key")
				case r.Operation == "putWebhookEndpoint" || r.Operation == "rotateWebhookSecret" || r.Operation == "sendTestWebhookEvent":
					require.Equal(t, Skip, r.Outcome)
					require.Contains(t, r.Reason, "pass --")
				default:
					require.Equal(t, Pass, r.Outcome, "%s: %+v", r.Operation, r)
				}
			}
		})
	}
}

// On a deployment whose back office fills the sales itself (LIQUIDITY=operator,
// PAYOUT=operator, as production), the fills are carried out, not shown refused.
func TestOperatorAdaptersConform(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
	rep, err := Run(context.Background(), Config{BaseURL: env.Root, APIKey: env.NewPartner(t), OperatorKey: env.NewOperator(t)})
	require.NoError(t, err)
	requireOK(t, rep)
	for _, op := range []string{"fillOrder", "createFill", "settleOrder", "settlePayout", "createPayout"} {
		r := rep.Result("operator", op)
		require.Equal(t, []int{200}, r.Statuses, op)
		require.Empty(t, r.Notes, op)
	}

	// Without an operator key the walk stops at the confirmed deposit, which the
	// back office would fill, and still passes.
	partnerOnly, err := Run(context.Background(), Config{BaseURL: env.Root, APIKey: env.NewPartner(t)})
	require.NoError(t, err)
	requireOK(t, partnerOnly)
	require.Contains(t, partnerOnly.Result("partner", "simulateSandboxEvent").Notes[0], "without --operator-key")

	// On the staging defaults the fills are refused, and the report says why.
	env = apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}, nil)
	rep, err = Run(context.Background(), Config{BaseURL: env.Root, APIKey: env.NewPartner(t), OperatorKey: env.NewOperator(t)})
	require.NoError(t, err)
	requireOK(t, rep)
	for _, op := range []string{"fillOrder", "createFill"} {
		r := rep.Result("operator", op)
		require.Equal(t, []int{409}, r.Statuses, op)
		require.Contains(t, r.Notes[0], "checked refused (409)")
	}
}

// On a deployment holding every action for a second operator (APPROVALS, as
// production does), each action the run proposes is checked as the 202 proposal
// it then is and withdrawn, four eyes' refusals are checked on the way (the
// proposer approving their own, a closed proposal decided again), and the run
// leaves nothing waiting and no operator's roles changed.
func TestFourEyesConforms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}, map[string]string{"APPROVALS": approvals.All()})
	opID, opKey := env.NewOperatorWith(t, "Conformance check", operators.Roles...)
	rep, err := Run(ctx, Config{BaseURL: env.Root, APIKey: env.NewPartner(t), OperatorKey: opKey})
	require.NoError(t, err)
	requireOK(t, rep)
	requireCoversContracts(t, rep)
	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	t.Log("\n" + text.String())
	held := map[string]string{ // operation → its action in APPROVALS
		"fillOrder": "fill", "settleOrder": "settle", "settlePayout": "payout", "refundTransaction": "refund",
		"reviewTransaction": "screening_review", "resolveRefundTask": "refund", "createFill": "fill", "createPayout": "payout",
		"setOperatorRoles": "operator",
	}
	for op, action := range held {
		r := rep.Result("operator", op)
		require.Equal(t, Pass, r.Outcome, "%+v", r)
		require.Equal(t, []int{202}, r.Statuses, op)
		require.Contains(t, r.Notes, "held for a second operator (202): the deployment's APPROVALS names "+action+"; the run withdrew its proposal", op)
	}
	for _, op := range []string{"failTransaction", "acceptShortPayment"} {
		require.Equal(t, []int{200}, rep.Result("operator", op).Statuses, "%s needs no second operator", op)
	}
	require.ElementsMatch(t, []int{404, 403, 409}, rep.Result("operator", "approveApproval").Statuses)
	require.ElementsMatch(t, []int{404, 200, 409}, rep.Result("operator", "rejectApproval").Statuses)
	require.ElementsMatch(t, []int{404, 200}, rep.Result("operator", "getApproval").Statuses)
	require.Nil(t, rep.Result("partner", "getPayout").Violations)

	// Every proposal of the run was withdrawn, and the operator is as made.
	oc := env.OperatorClient(t, opKey)
	pending := operatorclient.ApprovalStatus("pending")
	list, err := oc.ListApprovalsWithResponse(ctx, &operatorclient.ListApprovalsParams{Status: &pending})
	require.NoError(t, err)
	require.Empty(t, list.JSON200.Data.Data, "no proposal is left waiting")
	rejected := operatorclient.ApprovalStatus("rejected")
	list, err = oc.ListApprovalsWithResponse(ctx, &operatorclient.ListApprovalsParams{Status: &rejected, Limit: ptr(100)})
	require.NoError(t, err)
	require.Len(t, list.JSON200.Data.Data, 10, "one proposal per held request")
	for _, a := range list.JSON200.Data.Data {
		require.Equal(t, opID, a.ProposedBy.Id)
		require.Equal(t, opID, a.DecidedBy.Id, "withdrawn by its proposer")
	}
	ops, err := oc.ListOperatorsWithResponse(ctx)
	require.NoError(t, err)
	for _, o := range ops.JSON200.Data {
		if o.Id == opID {
			require.Len(t, o.Roles, len(operators.Roles))
		}
	}

	// With production's adapters too (the back office fills), a held fill leaves
	// the batch unfilled: its payout is skipped, saying why.
	env = apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)},
		map[string]string{"APPROVALS": approvals.All(), "LIQUIDITY": "operator", "PAYOUT": "operator"})
	rep, err = Run(ctx, Config{BaseURL: env.Root, APIKey: env.NewPartner(t), OperatorKey: env.NewOperator(t)})
	require.NoError(t, err)
	requireOK(t, rep)
	require.Equal(t, []int{202}, rep.Result("operator", "fillOrder").Statuses)
	require.Equal(t, Skip, rep.Result("operator", "createPayout").Outcome)
	require.Contains(t, rep.Result("operator", "createPayout").Reason, "held for a second operator")
}

// The operator key's operator must hold treasury (the walk's actions): without
// it the check does not run, and says which roles it needs. Without compliance
// or admin, the operations needing them are checked as the 403 they must answer.
func TestOperatorKeyRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}, nil)
	key := env.NewPartner(t)

	_, viewer := env.NewOperatorWith(t, "Viewer", operators.Viewer, operators.Compliance)
	_, err := Run(ctx, Config{BaseURL: env.Root, APIKey: key, OperatorKey: viewer})
	require.ErrorContains(t, err, `"Viewer"'s, who holds viewer,compliance but not treasury`)
	require.ErrorContains(t, err, "--role admin,treasury,compliance")

	_, treasurer := env.NewOperatorWith(t, "Treasurer", operators.Treasury)
	rep, err := Run(ctx, Config{BaseURL: env.Root, APIKey: key, OperatorKey: treasurer})
	require.NoError(t, err)
	requireOK(t, rep)
	for op, role := range map[string]string{"setOperatorRoles": "admin", "reviewTransaction": "compliance"} {
		r := rep.Result("operator", op)
		require.Equal(t, []int{403}, r.Statuses, op)
		require.Equal(t, []string{"checked refused (403): the operator key lacks the " + role + " role (a key holding it checks the operation as permitted)"}, r.Notes, op)
	}
	require.Equal(t, []int{200}, rep.Result("operator", "settleOrder").Statuses)
}

// The check fails a server that answers what its contract does not declare, and
// names the operation: each case tampers with one answer of the real service.
func TestTamperedAnswersFail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}, nil)
	key := env.NewPartner(t)
	opKey := env.NewOperator(t)

	cases := []struct {
		name      string
		api, op   string
		tamper    func(r *http.Response, body map[string]any)
		violation string
	}{
		{"an undeclared field", "partner", "getTransaction", func(_ *http.Response, body map[string]any) {
			body["data"].(map[string]any)["internal_note"] = "not in the contract"
		}, "internal_note"},
		{"an undeclared status", "partner", "createQuote", func(r *http.Response, _ map[string]any) {
			r.StatusCode, r.Status = http.StatusAccepted, "202 Accepted"
		}, "202"},
		{"a value outside an enum", "operator", "getOperatorTransaction", func(_ *http.Response, body map[string]any) {
			body["data"].(map[string]any)["status"] = "on_hold"
		}, "on_hold"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proxy := tampering(t, env.Root, tc.op, tc.tamper)
			rep, err := Run(ctx, Config{BaseURL: proxy, APIKey: key, OperatorKey: opKey})
			require.NoError(t, err)
			require.False(t, rep.OK())
			requireCoversContracts(t, rep)
			r := rep.Result(tc.api, tc.op)
			require.Equal(t, Fail, r.Outcome)
			require.NotEmpty(t, r.Violations)
			require.Contains(t, strings.Join(r.Violations, "\n"), tc.violation)

			var text bytes.Buffer
			require.NoError(t, rep.WriteText(&text))
			require.Regexp(t, `(?m)^`+tc.api+` +`+tc.op+` .* FAIL .*`+tc.violation, text.String(), "the report's line names the operation and the violation")
			require.Contains(t, text.String(), "DOES NOT CONFORM")
			t.Log("\n" + text.String())
			var doc Report
			var js bytes.Buffer
			require.NoError(t, rep.WriteJSON(&js))
			require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
			require.Equal(t, Fail, doc.Result(tc.api, tc.op).Outcome)
			require.Equal(t, rep.Failed, doc.Failed)
		})
	}
}

// tampering returns the address of a proxy to the service at root that hands
// every JSON answer to operation op to tamper before passing it on.
func tampering(t *testing.T, root, op string, tamper func(*http.Response, map[string]any)) string {
	t.Helper()
	target, err := url.Parse(root)
	require.NoError(t, err)
	partner, err := contractcheck.Partner(contractcheck.AsDeclared)
	require.NoError(t, err)
	operator, err := contractcheck.Operator(contractcheck.AsDeclared)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if partner.Operation(r.Request) != op && operator.Operation(r.Request) != op {
			return nil
		}
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		_ = r.Body.Close()
		var body map[string]any
		if json.Unmarshal(raw, &body) == nil && body["data"] != nil {
			tamper(r, body)
			raw, err = json.Marshal(body)
			if err != nil {
				return err
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		r.ContentLength = int64(len(raw))
		r.Header.Set("Content-Length", strconv.Itoa(len(raw)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// requireCoversContracts checks that the report has one result per operation
// of each contract, and no other.
func requireCoversContracts(t *testing.T, rep *Report) {
	t.Helper()
	partner, err := contractcheck.Partner(contractcheck.AsDeclared)
	require.NoError(t, err)
	operator, err := contractcheck.Operator(contractcheck.AsDeclared)
	require.NoError(t, err)
	got := map[string][]string{}
	for _, r := range rep.Results {
		got[r.API] = append(got[r.API], r.Operation)
	}
	require.ElementsMatch(t, partner.Operations(), got["partner"], "the partner contract's operations")
	require.ElementsMatch(t, operator.Operations(), got["operator"], "the operator contract's operations")
	require.Len(t, got, 2)
}

// requireOK fails with the report when the run found a failure.
func requireOK(t *testing.T, rep *Report) {
	t.Helper()
	if !rep.OK() {
		var b bytes.Buffer
		_ = rep.WriteText(&b)
		t.Fatalf("the service does not conform:\n%s", b.String())
	}
}
