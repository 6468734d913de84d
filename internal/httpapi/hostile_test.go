package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/httpapi"
	"partnerd/internal/operatorapi"
	"partnerd/internal/payout/paystack/paystacktest"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// hostileCase is one generated request: method, path (with query, already
// escaped as it goes on the wire), body, and header edits.
type hostileCase struct {
	name    string
	method  string
	path    string
	body    []byte
	ctype   string   // Content-Type; "" for none
	headers []string // extra "Name: value" lines, added (so duplicates stay duplicates)
	noKey   bool     // send no X-API-KEY
}

// outcome is what a case got: status and error code, compared across databases.
type outcome struct {
	Status int
	Code   string
}

// fixtures are the ids a battery's requests point at on one service.
type fixtures struct {
	txID, eventID string
}

// TestHostileInput sends well over 1,000 generated hostile requests over every
// operation and parameter (wrong types, NUL, control characters, invalid UTF-8 raw
// bytes, huge numbers, deep nesting, oversized bodies and headers, wrong content
// types, duplicated headers and parameters, invalid cursors and dates, unsupported
// methods) to the service on PostgreSQL and on SQLite. Every answer must be
// declared by the contract (the apitest client checks each one), none may be a 5xx,
// both databases must answer every case identically, and nothing may be stored but
// what a 2xx reported.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	results := map[string]map[string]outcome{}
	var mu sync.Mutex
	settings := map[string]string{"RATE_LIMIT_READS": "100000/1s,burst=100000", "RATE_LIMIT_WRITES": "100000/1s,burst=100000"}
	t.Run("databases", func(t *testing.T) {
		for _, db := range testdb.Both(t) {
			t.Run(db.Name, func(t *testing.T) {
				t.Parallel()
				got := runHostile(t, apitest.Start(t, db, settings))
				mu.Lock()
				results[db.Name] = got
				mu.Unlock()
			})
		}
	})
	pg, lite := results["postgres"], results["sqlite"]
	require.NotEmpty(t, pg)
	require.GreaterOrEqual(t, len(pg), 1000, "the battery has at least 1,000 requests")
	var diffs []string
	for name, o := range pg {
		if lite[name] != o {
			diffs = append(diffs, fmt.Sprintf("%s: postgres %v, sqlite %v", name, o, lite[name]))
		}
	}
	sort.Strings(diffs)
	require.Empty(t, diffs, "both databases answer every case identically")
}

// TestHostileInputOperator sends the same battery to every operation of the
// operator API (the battery fails if one is missing), on both databases: every
// answer declared by the operator contract, none a 5xx, both databases alike, and
// nothing changed (every action meets a transaction awaiting its deposit, or an
// unknown deposit).
func TestHostileInputOperator(t *testing.T) {
	t.Parallel()
	results := map[string]map[string]outcome{}
	var mu sync.Mutex
	settings := map[string]string{"RATE_LIMIT_READS": "100000/1s,burst=100000", "RATE_LIMIT_WRITES": "100000/1s,burst=100000"}
	t.Run("databases", func(t *testing.T) {
		for _, db := range testdb.Both(t) {
			t.Run(db.Name, func(t *testing.T) {
				t.Parallel()
				// The banks and settlement accounts ask a fake Paystack, which
				// fails the test on a request Paystack's document does not allow.
				fake := paystacktest.New(t)
				withPaystack := map[string]string{"PAYSTACK_BASE_URL": fake.URL, "PAYSTACK_SECRET_KEY": paystacktest.Key}
				for k, v := range settings {
					withPaystack[k] = v
				}
				got := runHostileOperator(t, apitest.Start(t, db, withPaystack))
				mu.Lock()
				results[db.Name] = got
				mu.Unlock()
			})
		}
	})
	pg, lite := results["postgres"], results["sqlite"]
	require.GreaterOrEqual(t, len(pg), 900, "the battery has at least 100 requests per operation")
	var diffs []string
	for name, o := range pg {
		if lite[name] != o {
			diffs = append(diffs, fmt.Sprintf("%s: postgres %v, sqlite %v", name, o, lite[name]))
		}
	}
	sort.Strings(diffs)
	require.Empty(t, diffs, "both databases answer every case identically")
	// The text rule holds on the operator API as on the partner one.
	for _, name := range []string{"fillOrder body reference=embedded NUL", "failTransaction body reason=C1 NEL",
		"failTransaction body reason=line separator", "fillOrder body reference=paragraph separator",
		"failTransaction body reason=replacement char", "failTransaction body reason=escape", "fillOrder body reference=invalid UTF-8 ff fe",
		"failTransaction header idempotency key invalid UTF-8", "listStage query unknown parameter",
		"fillOrder whole body trailing garbage", "getOperatorTransaction path embedded NUL"} {
		require.Equal(t, outcome{Status: http.StatusBadRequest, Code: "invalid_request"}, pg[name], name)
	}
}

func runHostileOperator(t *testing.T, env *apitest.Env) map[string]outcome {
	ctx := context.Background()
	partnerKey := env.NewPartner(t)
	c := env.Client(t, partnerKey)
	tx := create(t, c, direct("HOSTILE-OP-BASE", "bep20", "2000"))
	operatorKey := env.NewOperator(t)
	oc := env.OperatorClient(t, operatorKey)
	partnerID := env.PartnerID(t, partnerKey)
	operatorsBefore, err := oc.ListOperatorsWithResponse(ctx)
	require.NoError(t, err)
	require.NotNil(t, operatorsBefore.JSON200)
	require.NotEmpty(t, operatorsBefore.JSON200.Data)
	operatorID := operatorsBefore.JSON200.Data[0].Id
	partnersBefore, err := oc.ListPartnersWithResponse(ctx)
	require.NoError(t, err)
	require.NotNil(t, partnersBefore.JSON200)
	partnerKeysBefore := len(listPartnerKeys(t, oc, partnerID))
	operatorKeysBefore := len(listOperatorKeys(t, oc, operatorID))

	spec, err := operatorapi.Spec()
	require.NoError(t, err)
	ops, paths := operatorOps(tx.Id.String(), partnerID.String(), operatorID.String())
	requireEveryOperation(t, specIDs(spec), ops)
	cases := hostileCases(ops, paths)
	out, _ := sendAll(t, env.OperatorHTTPClient(t), env.OperatorURL(), operatorKey, cases)

	// Nothing changed: the transaction awaits its deposit as it did, no key was added,
	// rolled or revoked, and the only accounts created are those a 200 reported (a
	// valid name is all createPartner and createOperator need, so the header variants
	// of a valid request succeed).
	got, err := c.GetTransactionWithResponse(ctx, tx.Id)
	require.NoError(t, err)
	require.Equal(t, client.TransactionStatusAwaitingDeposit, got.JSON200.Data.Status)
	require.Equal(t, []string{"transaction:created"}, apitest.Reasons(apitest.History(t, c, tx.Id)))
	createdPartners, createdOperators := 0, 0
	for _, hc := range cases {
		if hc.method != http.MethodPost || out[hc.name].Status != http.StatusOK {
			continue
		}
		switch hc.path {
		case "/partners":
			createdPartners++
		case "/operators":
			createdOperators++
		}
	}
	partnersAfter, err := oc.ListPartnersWithResponse(ctx)
	require.NoError(t, err)
	require.NotNil(t, partnersAfter.JSON200)
	require.Len(t, partnersAfter.JSON200.Data, len(partnersBefore.JSON200.Data)+createdPartners)
	operatorsAfter, err := oc.ListOperatorsWithResponse(ctx)
	require.NoError(t, err)
	require.NotNil(t, operatorsAfter.JSON200)
	require.Len(t, operatorsAfter.JSON200.Data, len(operatorsBefore.JSON200.Data)+createdOperators)
	for _, k := range listPartnerKeys(t, oc, partnerID) {
		require.Equal(t, operatorclient.ApiKeyStatusActive, k.Status)
	}
	require.Len(t, listPartnerKeys(t, oc, partnerID), partnerKeysBefore)
	for _, k := range listOperatorKeys(t, oc, operatorID) {
		require.Equal(t, operatorclient.ApiKeyStatusActive, k.Status)
	}
	require.Len(t, listOperatorKeys(t, oc, operatorID), operatorKeysBefore)
	return out
}

func listPartnerKeys(t *testing.T, oc *operatorclient.ClientWithResponses, id uuid.UUID) []operatorclient.ApiKey {
	t.Helper()
	res, err := oc.ListPartnerKeysWithResponse(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, res.JSON200)
	return res.JSON200.Data
}

func listOperatorKeys(t *testing.T, oc *operatorclient.ClientWithResponses, id uuid.UUID) []operatorclient.ApiKey {
	t.Helper()
	res, err := oc.ListOperatorKeysWithResponse(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, res.JSON200)
	return res.JSON200.Data
}

// operatorOps are the operator API's operations against transaction txID (awaiting
// its deposit), partner partnerID and operator operatorID. No action can change
// anything: batches name only txID, keys are added only to unknown accounts, and
// keys are rolled and revoked only by unknown key ids; createPartner and
// createOperator are the exceptions, checked by what their 200s reported.
func operatorOps(txID, partnerID, operatorID string) ([]hostileOp, map[string]string) {
	ref := map[string]any{"reference": "LP-1"}
	unknownAccount, unknownKey := uuid.NewString(), uuid.NewString()
	ops := []hostileOp{
		{name: "listStage", method: "GET", path: "/transactions?stage=awaiting_fill", query: []string{"cursor", "limit", "partner_id", "network", "from", "to"}},
		{name: "getOperatorTransaction", method: "GET", path: "/transactions/" + txID},
		{name: "fillOrder", method: "POST", path: "/transactions/" + txID + "/fill", idempotent: true,
			body: map[string]any{"rate": "1549.10", "fiat_amount": "154910.00", "reference": "LP-1"}},
		{name: "settleOrder", method: "POST", path: "/transactions/" + txID + "/settle", idempotent: true, body: ref},
		{name: "settlePayout", method: "POST", path: "/transactions/" + txID + "/payout", idempotent: true, body: ref},
		{name: "failTransaction", method: "POST", path: "/transactions/" + txID + "/fail", idempotent: true, body: map[string]any{"reason": "Rejected"}},
		{name: "refundTransaction", method: "POST", path: "/transactions/" + txID + "/refund", idempotent: true,
			body: map[string]any{"tx_hash": "0x" + strings.Repeat("ab", 32)}},
		{name: "listUnmatchedDeposits", method: "GET", path: "/deposits/unmatched", query: []string{"status", "cursor", "limit"}},
		{name: "resolveUnmatchedDeposit", method: "POST", path: "/deposits/" + uuid.NewString() + "/resolve", idempotent: true,
			body: map[string]any{"action": "credited", "note": "n"}},
		{name: "acceptShortPayment", method: "POST", path: "/transactions/" + txID + "/accept", idempotent: true,
			body: map[string]any{"reason": "Merchant agreed"}},
		{name: "reviewTransaction", method: "POST", path: "/transactions/" + txID + "/review", idempotent: true,
			body: map[string]any{"decision": "release", "note": "false positive"}},
		{name: "listScreeningReviews", method: "GET", path: "/screening/reviews", query: []string{"state"}},
		{name: "listScreeningLists", method: "GET", path: "/screening/lists"},
		{name: "blockedPropertyReport", method: "GET", path: "/screening/blocked"},
		{name: "listRefundTasks", method: "GET", path: "/refund-tasks", query: []string{"kind", "status", "partner_id", "network", "cursor", "limit"}},
		{name: "resolveRefundTask", method: "POST", path: "/refund-tasks/" + uuid.NewString() + "/resolve", idempotent: true,
			body: map[string]any{"action": "credited", "note": "n"}},
		{name: "getOverview", method: "GET", path: "/overview"},
		{name: "listAudit", method: "GET", path: "/audit", query: []string{"cursor", "limit", "operator_id", "transaction_id", "action", "from", "to"}},
		{name: "listPayouts", method: "GET", path: "/payouts", query: []string{"cursor", "limit", "partner_id"}},
		{name: "createPayout", method: "POST", path: "/payouts", idempotent: true,
			body: map[string]any{"partner_id": partnerID, "transaction_ids": []string{txID}, "reference": "NIP-1", "fiat_amount": "2000.00"}},
		{name: "listFills", method: "GET", path: "/fills", query: []string{"cursor", "limit"}},
		{name: "createFill", method: "POST", path: "/fills", idempotent: true,
			body: map[string]any{"transaction_ids": []string{txID}, "rate": "1549.10", "reference": "LP-1"}},
		{name: "listPartners", method: "GET", path: "/partners"},
		{name: "createPartner", method: "POST", path: "/partners", idempotent: true, body: map[string]any{"name": "Hostile Pay"}},
		{name: "listPartnerKeys", method: "GET", path: "/partners/" + partnerID + "/keys"},
		{name: "createPartnerKey", method: "POST", path: "/partners/" + unknownAccount + "/keys", idempotent: true, body: map[string]any{}},
		{name: "listPartnerUsers", method: "GET", path: "/partners/" + partnerID + "/users"},
		{name: "listBanks", method: "GET", path: "/banks"},
		{name: "getSettlementAccount", method: "GET", path: "/partners/" + partnerID + "/settlement-account"},
		{name: "putSettlementAccount", method: "PUT", path: "/partners/" + unknownAccount + "/settlement-account", idempotent: true,
			body: map[string]any{"bank_code": "058", "account_number": "0123456789"}},
		{name: "invitePartnerUser", method: "POST", path: "/partners/" + unknownAccount + "/users", idempotent: true,
			body: map[string]any{"email": "ada@example.com", "role": "admin"}},
		{name: "rollPartnerKey", method: "POST", path: "/partners/" + partnerID + "/keys/" + unknownKey + "/roll", idempotent: true,
			body: map[string]any{"overlap": "24h"}},
		{name: "revokePartnerKey", method: "DELETE", path: "/partners/" + partnerID + "/keys/" + unknownKey, idempotent: true},
		{name: "resendWebhookBacklog", method: "POST", path: "/partners/" + unknownAccount + "/webhook-endpoint/resend", idempotent: true},
		{name: "listOperators", method: "GET", path: "/operators"},
		{name: "createOperator", method: "POST", path: "/operators", idempotent: true, body: map[string]any{"name": "Hostile Operator"}},
		{name: "listOperatorKeys", method: "GET", path: "/operators/" + operatorID + "/keys"},
		{name: "createOperatorKey", method: "POST", path: "/operators/" + unknownAccount + "/keys", idempotent: true, body: map[string]any{}},
		{name: "rollOperatorKey", method: "POST", path: "/operators/" + operatorID + "/keys/" + unknownKey + "/roll", idempotent: true,
			body: map[string]any{"overlap": "24h"}},
		{name: "revokeOperatorKey", method: "DELETE", path: "/operators/" + operatorID + "/keys/" + unknownKey, idempotent: true},
		{name: "setOperatorRoles", method: "PUT", path: "/operators/" + unknownAccount + "/roles", idempotent: true,
			body: map[string]any{"roles": []string{"viewer"}}},
		{name: "listApprovals", method: "GET", path: "/approvals", query: []string{"status", "action", "cursor", "limit"}},
		{name: "getApproval", method: "GET", path: "/approvals/" + unknownAccount},
		{name: "approveApproval", method: "POST", path: "/approvals/" + unknownAccount + "/approve", idempotent: true, body: map[string]any{}},
		{name: "rejectApproval", method: "POST", path: "/approvals/" + unknownAccount + "/reject", idempotent: true,
			body: map[string]any{"note": "n"}},
	}
	paths := map[string]string{
		"getOperatorTransaction":  "/transactions/%s",
		"fillOrder":               "/transactions/%s/fill",
		"settleOrder":             "/transactions/%s/settle",
		"settlePayout":            "/transactions/%s/payout",
		"failTransaction":         "/transactions/%s/fail",
		"refundTransaction":       "/transactions/%s/refund",
		"resolveUnmatchedDeposit": "/deposits/%s/resolve",
		"acceptShortPayment":      "/transactions/%s/accept",
		"reviewTransaction":       "/transactions/%s/review",
		"resolveRefundTask":       "/refund-tasks/%s/resolve",
		// Account ids on the key lists and additions; key ids (under a real account,
		// so the key id itself is what is judged) on rolls and revocations.
		"listPartnerKeys":      "/partners/%s/keys",
		"createPartnerKey":     "/partners/%s/keys",
		"listPartnerUsers":     "/partners/%s/users",
		"invitePartnerUser":    "/partners/%s/users",
		"resendWebhookBacklog": "/partners/%s/webhook-endpoint/resend",
		"getSettlementAccount": "/partners/%s/settlement-account",
		"putSettlementAccount": "/partners/%s/settlement-account",
		"rollPartnerKey":       "/partners/" + partnerID + "/keys/%s/roll",
		"revokePartnerKey":     "/partners/" + partnerID + "/keys/%s",
		"listOperatorKeys":     "/operators/%s/keys",
		"createOperatorKey":    "/operators/%s/keys",
		"rollOperatorKey":      "/operators/" + operatorID + "/keys/%s/roll",
		"revokeOperatorKey":    "/operators/" + operatorID + "/keys/%s",
		"setOperatorRoles":     "/operators/%s/roles",
		"getApproval":          "/approvals/%s",
		"approveApproval":      "/approvals/%s/approve",
		"rejectApproval":       "/approvals/%s/reject",
	}
	return ops, paths
}

func runHostile(t *testing.T, env *apitest.Env) map[string]outcome {
	key := env.NewPartner(t)
	c := env.Client(t, key)
	ctx := context.Background()
	tx := create(t, c, direct("HOSTILE-BASE", "bep20", "2000"))
	register(t, c, "http://127.0.0.1:9/")
	events, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{})
	require.NoError(t, err)
	require.NotEmpty(t, events.JSON200.Data.Data)
	fx := fixtures{txID: tx.Id.String(), eventID: events.JSON200.Data.Data[0].EventId.String()}

	ops, paths := partnerOps(fx)
	requireEveryOperation(t, partnerSpecIDs(t), ops)
	out, created := sendAll(t, env.HTTPClient(t), env.BaseURL, key, hostileCases(ops, paths))

	// Nothing was stored but what a 201 reported, and the base transaction is as it was.
	list, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{Limit: ptr(100)})
	require.NoError(t, err)
	require.Len(t, list.JSON200.Data.Data, 1+created)
	got, err := c.GetTransactionWithResponse(ctx, tx.Id)
	require.NoError(t, err)
	require.Equal(t, client.TransactionStatusAwaitingDeposit, got.JSON200.Data.Status)
	require.Equal(t, "HOSTILE-BASE", got.JSON200.Data.MerchantReference)
	return out
}

// sendAll sends cases eight at a time and returns each case's outcome and how many
// transactions were created. No answer may be a 5xx.
func sendAll(t *testing.T, hc *http.Client, base, key string, cases []hostileCase) (map[string]outcome, int) {
	out := make(map[string]outcome, len(cases))
	var mu sync.Mutex
	created := 0
	work := make(chan hostileCase)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for hc0 := range work {
				o, ok := send(t, hc, base, key, hc0)
				if !ok {
					continue
				}
				if testing.Verbose() {
					t.Logf("%s → %d %s", hc0.name, o.Status, o.Code)
				}
				if o.Status >= 500 && !noChainHere(hc0.name, o) {
					t.Errorf("%s: %d %s", hc0.name, o.Status, o.Code)
				}
				mu.Lock()
				if _, dup := out[hc0.name]; dup {
					t.Errorf("duplicate case name %q", hc0.name)
				}
				out[hc0.name] = o
				if hc0.method == http.MethodPost && hc0.path == "/transactions" && o.Status == http.StatusCreated {
					created++
				}
				mu.Unlock()
			}
		}()
	}
	for _, hc0 := range cases {
		work <- hc0
	}
	close(work)
	wg.Wait()
	return out, created
}

// hostileOp is a valid request of one operation; bodies are maps so fields can be mutated.
// noChainHere reports whether outcome o of case name is the documented answer of a
// well-formed rescan on a server that reads no chain (503 service_unavailable): the
// battery's server watches none.
func noChainHere(name string, o outcome) bool {
	return strings.HasPrefix(name, "rescanDeposit ") && o.Status == http.StatusServiceUnavailable && o.Code == "service_unavailable"
}

type hostileOp struct {
	name, method, path string
	body               map[string]any
	idempotent         bool
	query              []string // query parameters it takes
	// fresh, when set, makes each copy of the body unique (a new merchant reference).
	fresh func(map[string]any, int)
}

// requireEveryOperation fails unless ops covers every operation of a contract, so
// an operation added later is in the battery or the battery fails.
func requireEveryOperation(t *testing.T, ids []string, ops []hostileOp) {
	t.Helper()
	var names []string
	for _, o := range ops {
		names = append(names, o.name)
	}
	require.ElementsMatch(t, ids, names, "the battery covers every operation of the contract")
}

func partnerSpecIDs(t *testing.T) []string {
	spec, err := httpapi.Spec()
	require.NoError(t, err)
	return specIDs(spec)
}

func specIDs(spec *openapi3.T) []string {
	var ids []string
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, strings.ToLower(op.OperationID[:1])+op.OperationID[1:])
		}
	}
	return ids
}

// partnerOps are the partner API's operations and the path templates of those
// with a path parameter.
func partnerOps(fx fixtures) ([]hostileOp, map[string]string) {
	unknown := uuid.NewString()
	ops := []hostileOp{
		{name: "createQuote", method: "POST", path: "/quotes", body: map[string]any{"crypto_currency": "usdt", "network": "bep20", "crypto_amount": "100"}},
		{name: "createTransaction", method: "POST", path: "/transactions", idempotent: true,
			body:  map[string]any{"merchant_reference": "REF", "crypto_currency": "usdt", "network": "trc20", "fiat_amount": "2000", "merchant_id": "M-1", "terminal_id": "T-1", "seller_phone": "+2348012345678"},
			fresh: func(m map[string]any, n int) { m["merchant_reference"] = fmt.Sprintf("HOSTILE-%05d", n) }},
		{name: "listTransactions", method: "GET", path: "/transactions", query: []string{"cursor", "limit", "status", "merchant_id", "terminal_id", "merchant_reference", "deposit_address", "tx_hash", "network", "from", "to"}},
		{name: "getTransaction", method: "GET", path: "/transactions/" + fx.txID},
		{name: "getTransactionByReference", method: "GET", path: "/transactions/reference/HOSTILE-BASE"},
		{name: "cancelTransaction", method: "POST", path: "/transactions/" + unknown + "/cancel", idempotent: true},
		{name: "acceptTransaction", method: "POST", path: "/transactions/" + unknown + "/accept", idempotent: true},
		{name: "refundTransaction", method: "POST", path: "/transactions/" + unknown + "/refund", idempotent: true,
			body: map[string]any{"address": "0x8576acc5c05d6ce88f4e49bf65bdf0c62f91353c"}},
		{name: "rescanDeposit", method: "POST", path: "/deposits/rescan",
			body: map[string]any{"network": "bep20", "tx_hash": "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060"}},
		{name: "getTransactionStatusHistory", method: "GET", path: "/transactions/" + fx.txID + "/status-history"},
		{name: "listRevenue", method: "GET", path: "/revenue", query: []string{"from", "to", "include_summary", "cursor", "limit", "crypto_currency", "network"}},
		{name: "listPayouts", method: "GET", path: "/payouts", query: []string{"from", "to", "cursor", "limit"}},
		{name: "getPayout", method: "GET", path: "/payouts/" + unknown},
		{name: "getBalance", method: "GET", path: "/balance"},
		{name: "exportTransactions", method: "GET", path: "/exports/transactions", query: []string{"from", "to"}},
		{name: "exportPayouts", method: "GET", path: "/exports/payouts", query: []string{"from", "to"}},
		{name: "getWebhookEndpoint", method: "GET", path: "/webhooks/endpoint"},
		{name: "putWebhookEndpoint", method: "PUT", path: "/webhooks/endpoint", body: map[string]any{"url": "http://127.0.0.1:9/", "enabled": true}},
		{name: "rotateWebhookSecret", method: "POST", path: "/webhooks/endpoint/rotate-secret"},
		{name: "sendTestWebhookEvent", method: "POST", path: "/webhooks/endpoint/test", idempotent: true},
		{name: "listWebhookEvents", method: "GET", path: "/webhooks/events", query: []string{"cursor", "limit", "event_type", "transaction_id", "publish_status", "from", "to"}},
		{name: "getWebhookEvent", method: "GET", path: "/webhooks/events/" + fx.eventID},
		{name: "replayWebhookEvent", method: "POST", path: "/webhooks/events/" + fx.eventID + "/replay"},
		{name: "simulateSandboxEvent", method: "POST", path: "/sandbox/simulate", body: map[string]any{"event": "deposit.detected", "transaction_id": unknown}},
	}
	paths := map[string]string{
		"getTransaction":              "/transactions/%s",
		"getTransactionByReference":   "/transactions/reference/%s",
		"cancelTransaction":           "/transactions/%s/cancel",
		"acceptTransaction":           "/transactions/%s/accept",
		"refundTransaction":           "/transactions/%s/refund",
		"getTransactionStatusHistory": "/transactions/%s/status-history",
		"getPayout":                   "/payouts/%s",
		"getWebhookEvent":             "/webhooks/events/%s",
		"replayWebhookEvent":          "/webhooks/events/%s/replay",
	}
	return ops, paths
}

// send makes one request through the contract-checking client and returns its outcome.
func send(t *testing.T, hc *http.Client, base, key string, c hostileCase) (outcome, bool) {
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, body)
	if err != nil {
		t.Errorf("%s: build request: %v", c.name, err)
		return outcome{}, false
	}
	if !c.noKey {
		req.Header.Set("X-API-KEY", key)
	}
	if c.ctype != "" {
		req.Header.Set("Content-Type", c.ctype)
	}
	for _, h := range c.headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Errorf("%s: %v", c.name, err)
		return outcome{}, false
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	o := outcome{Status: res.StatusCode}
	if res.StatusCode >= 400 {
		var e client.Error
		if json.Unmarshal(b, &e) == nil {
			o.Code = string(e.Error.Code)
		}
	}
	return o, true
}

// hostileCases generates the battery over ops (paths: the path templates of the
// operations with a path parameter).
func hostileCases(ops []hostileOp, paths map[string]string) []hostileCase {
	var cases []hostileCase
	add := func(c hostileCase) {
		if c.ctype == "" && c.body != nil {
			c.ctype = "application/json"
		}
		cases = append(cases, c)
	}
	idem := func() string { return "Idempotency-Key: " + uuid.NewString() }
	unknown := uuid.NewString()
	type op = hostileOp
	n := 0
	encode := func(o op, body map[string]any) []byte {
		if body == nil {
			return nil
		}
		b, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		return b
	}
	// fresh copies an operation's valid body, giving every create its own merchant
	// reference, so no two cases conflict and no outcome depends on the order the
	// cases run in.
	fresh := func(o op) map[string]any {
		if o.body == nil {
			return nil
		}
		m := map[string]any{}
		for k, v := range o.body {
			m[k] = v
		}
		if o.fresh != nil {
			n++
			o.fresh(m, n)
		}
		return m
	}
	headersOf := func(o op) []string {
		if o.idempotent {
			return []string{idem()}
		}
		return nil
	}

	// Raw JSON values that replace a field, as they appear on the wire.
	badValues := map[string]string{
		"number": `123`, "negative": `-1`, "huge number": `1e400`, "long integer": `123456789012345678901234567890`,
		"true": `true`, "null": `null`, "object": `{}`, "array": `[]`, "empty": `""`, "NUL": `"\u0000"`,
		"embedded NUL": `"a\u0000b"`, "unit separator": `"a\u001fb"`, "escape": `"a\u001b[31mb"`, "DEL": `"a\u007fb"`, "C1 NEL": `"a\u0085b"`,
		"line separator": `"a\u2028b"`, "paragraph separator": `"a\u2029b"`,
		"lone surrogate": `"a\ud800b"`, "replacement char": `"a\ufffdb"`, "upper case": `"USDT"`, "newline": `"a\nb"`,
		"long string": `"` + strings.Repeat("x", 5000) + `"`, "deep array": strings.Repeat("[", 500) + strings.Repeat("]", 500),
		"decimal with 10 places": `"1.0000000001"`, "exponent string": `"1e5"`, "spaces": `"  "`,
	}
	// Raw bytes that replace a field: invalid UTF-8 inside a JSON string.
	badBytes := map[string][]byte{
		"invalid UTF-8 ff fe": []byte("\"bb\xff\xfe\""), "overlong slash": []byte("\"\xc0\xaf\""), "truncated sequence": []byte("\"a\xe2\x82\""),
	}
	placeholder := "\"__HOSTILE__\""
	for _, o := range ops {
		if o.body == nil {
			continue
		}
		fields := make([]string, 0, len(o.body)+1)
		for k := range o.body {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		for _, f := range fields {
			for vn, raw := range badValues {
				m := fresh(o)
				m[f] = "__HOSTILE__"
				b := bytes.Replace(encode(o, m), []byte(placeholder), []byte(raw), 1)
				add(hostileCase{name: fmt.Sprintf("%s body %s=%s", o.name, f, vn), method: o.method, path: o.path, body: b, headers: headersOf(o)})
			}
			for vn, raw := range badBytes {
				m := fresh(o)
				m[f] = "__HOSTILE__"
				b := bytes.Replace(encode(o, m), []byte(placeholder), raw, 1)
				add(hostileCase{name: fmt.Sprintf("%s body %s=%s", o.name, f, vn), method: o.method, path: o.path, body: b, headers: headersOf(o)})
			}
			m := fresh(o)
			delete(m, f)
			add(hostileCase{name: fmt.Sprintf("%s body without %s", o.name, f), method: o.method, path: o.path, body: encode(o, m), headers: headersOf(o)})
		}
		// Property names.
		for pn, raw := range map[string]string{"misspelled": `"crypto_currensy"`, "NUL name": `"a\u0000"`, "empty name": `""`} {
			m := fresh(o)
			m["__HOSTILE__"] = 1
			b := bytes.Replace(encode(o, m), []byte(placeholder), []byte(raw), 1)
			add(hostileCase{name: fmt.Sprintf("%s property %s", o.name, pn), method: o.method, path: o.path, body: b, headers: headersOf(o)})
		}
		m := fresh(o)
		m["__HOSTILE__"] = 1
		b := bytes.Replace(encode(o, m), []byte(placeholder), []byte("\"bad\xffname\""), 1)
		add(hostileCase{name: o.name + " property invalid UTF-8", method: o.method, path: o.path, body: b, headers: headersOf(o)})
		// A duplicated key: the last one wins, like every JSON decoder we use.
		m = fresh(o)
		dup := bytes.Replace(encode(o, m), []byte("{"), []byte(`{"__dup":1,"__dup":2,`), 1)
		add(hostileCase{name: o.name + " duplicated property", method: o.method, path: o.path, body: dup, headers: headersOf(o)})
	}

	// Whole bodies and content types, on every operation that takes a body or none.
	wholeBodies := map[string][]byte{
		"empty": {}, "null": []byte("null"), "array": []byte("[]"), "string": []byte(`"x"`), "number": []byte("1"),
		"truncated": []byte(`{"a":`), "two documents": []byte("{}{}"), "trailing garbage": []byte("{} x"),
		"deep nesting":      []byte(strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)),
		"over 64 KiB":       []byte(`{"a":"` + strings.Repeat("x", 70<<10) + `"}`),
		"1 MiB":             []byte(`{"a":"` + strings.Repeat("x", 1<<20) + `"}`),
		"raw invalid UTF-8": []byte("\xff\xfe{}"), "BOM": []byte("\xef\xbb\xbf{}"), "NUL bytes": []byte("{\x00}"),
	}
	contentTypes := []string{"text/plain", "application/xml", "multipart/form-data; boundary=x", "application/json; charset=latin1",
		"application/x-www-form-urlencoded", "application/json, text/plain", "\xff"}
	for _, o := range ops {
		if o.method == "GET" {
			continue
		}
		for bn, b := range wholeBodies {
			add(hostileCase{name: fmt.Sprintf("%s whole body %s", o.name, bn), method: o.method, path: o.path, body: b, headers: headersOf(o)})
		}
		valid := func() []byte {
			if b := encode(o, fresh(o)); b != nil {
				return b
			}
			return []byte("{}")
		}
		for _, ct := range contentTypes {
			add(hostileCase{name: fmt.Sprintf("%s content type %q", o.name, ct), method: o.method, path: o.path, body: valid(), ctype: ct, headers: headersOf(o)})
		}
		// No Content-Type at all (add would default it).
		cases = append(cases, hostileCase{name: o.name + " no content type", method: o.method, path: o.path, body: valid(), headers: headersOf(o)})
		add(hostileCase{name: o.name + " duplicated content type", method: o.method, path: o.path, body: encode(o, fresh(o)),
			headers: append(headersOf(o), "Content-Type: text/plain")})
	}

	// Headers, on every operation.
	for _, o := range ops {
		base := hostileCase{method: o.method, path: o.path}
		bodyOf := func() []byte { return encode(o, fresh(o)) }
		variants := map[string]hostileCase{
			"no key":               {noKey: true},
			"malformed key":        {noKey: true, headers: []string{"X-API-KEY: hello"}},
			"unknown key":          {noKey: true, headers: []string{"X-API-KEY: sk_sandbox_" + strings.Repeat("A", 43)}},
			"live key":             {noKey: true, headers: []string{"X-API-KEY: sk_live_" + strings.Repeat("A", 43)}},
			"key with high bytes":  {noKey: true, headers: []string{"X-API-KEY: sk_sandbox_\xff\xfe"}},
			"100 KiB key":          {noKey: true, headers: []string{"X-API-KEY: sk_sandbox_" + strings.Repeat("A", 100<<10)}},
			"duplicated key":       {headers: []string{"X-API-KEY: sk_sandbox_other"}},
			"100 KiB other header": {headers: []string{"X-Junk: " + strings.Repeat("j", 100<<10)}},
		}
		if o.idempotent {
			variants["no idempotency key"] = hostileCase{headers: []string{}}
			variants["empty idempotency key"] = hostileCase{headers: []string{"Idempotency-Key: "}}
			variants["long idempotency key"] = hostileCase{headers: []string{"Idempotency-Key: " + strings.Repeat("k", 300)}}
			variants["idempotency key invalid UTF-8"] = hostileCase{headers: []string{"Idempotency-Key: k\xff\xfe"}}
			variants["idempotency key C1"] = hostileCase{headers: []string{"Idempotency-Key: k\xc2\x85"}}
			variants["duplicated idempotency key"] = hostileCase{headers: []string{idem(), idem()}}
		}
		for vn, v := range variants {
			c := base
			c.name = fmt.Sprintf("%s header %s", o.name, vn)
			c.noKey = v.noKey
			c.headers = v.headers
			if o.idempotent && !strings.Contains(vn, "idempotency key") {
				c.headers = append(c.headers, idem())
			}
			c.body = bodyOf()
			add(c)
		}
		// Unsupported methods on every path.
		for _, m := range []string{"OPTIONS", "DELETE", "PATCH", "TRACE"} {
			add(hostileCase{name: fmt.Sprintf("%s method %s", o.name, m), method: m, path: o.path})
		}
	}

	// Path parameters, as they go on the wire.
	pathValues := map[string]string{
		"NUL": "%00", "embedded NUL": "a%00b", "invalid UTF-8": "%ff%fe", "overlong": "%C0%AF", "control": "a%01b",
		"DEL": "a%7Fb", "C1": "a%C2%85b", "replacement char": "a%EF%BF%BDb", "not a uuid": "not-a-uuid", "long": strings.Repeat("z", 300),
		"huge number": "99999999999999999999999999", "dot dot": "..", "encoded slash": "a%2Fb", "space": "a%20b", "percent": "%25",
		"uuid upper case": strings.ToUpper(unknown), "unknown uuid": uuid.NewString(), "unicode": "%C3%A9cole",
	}
	for _, o := range ops {
		tmpl, ok := paths[o.name]
		if !ok {
			continue
		}
		for vn, v := range pathValues {
			add(hostileCase{name: fmt.Sprintf("%s path %s", o.name, vn), method: o.method, path: fmt.Sprintf(tmpl, v), headers: headersOf(o)})
		}
	}

	// Query parameters, as they go on the wire.
	queryValues := map[string]string{
		"NUL": "%00", "embedded NUL": "a%00b", "invalid UTF-8": "%ff%fe", "control": "a%01b", "DEL": "%7F", "C1": "%C2%85",
		"empty": "", "negative": "-1", "zero": "0", "over max": "101", "huge number": "99999999999999999999999", "float": "1.5",
		"exponent": "1e309", "bad date": "2026-02-30T00:00:00Z", "date without zone": "2026-02-01T00:00:00", "not a date": "yesterday",
		"bad bool": "yes", "bad enum": "bogus", "commas": ",,,", "long": strings.Repeat("q", 2000), "bad cursor": "abc.def",
		"upper case": "USDT", "bad escape": "%zz", "plus": "a+b",
	}
	for _, o := range ops {
		q := o.path + "?" // the path, ready for another query parameter
		if strings.Contains(o.path, "?") {
			q = o.path + "&"
		}
		for _, p := range o.query {
			for vn, v := range queryValues {
				add(hostileCase{name: fmt.Sprintf("%s query %s=%s", o.name, p, vn), method: o.method, path: q + p + "=" + v})
			}
			add(hostileCase{name: fmt.Sprintf("%s query %s twice", o.name, p), method: o.method, path: q + p + "=1&" + p + "=2"})
		}
		if o.method == "GET" {
			add(hostileCase{name: o.name + " query unknown parameter", method: o.method, path: q + "nope=1"})
			add(hostileCase{name: o.name + " query NUL name", method: o.method, path: q + "a%00=1"})
			add(hostileCase{name: o.name + " query invalid UTF-8 name", method: o.method, path: q + "%ff=1"})
			add(hostileCase{name: o.name + " GET with a body", method: o.method, path: o.path, body: []byte("not json"), ctype: "text/plain"})
			add(hostileCase{name: o.name + " GET with a 1 MiB body", method: o.method, path: o.path, body: bytes.Repeat([]byte("x"), 1<<20)})
		}
	}
	return cases
}
