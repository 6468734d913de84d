package contractcheck

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"partnerd/internal/httpapi"
	"partnerd/internal/operatorapi"
)

// undeclared is a value no enum of either contract lists.
const undeclared = "not_in_the_contract"

// exchange runs one answer through a validator as the clients do and returns its
// verdict.
type validator func(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error

func answer(t *testing.T, check validator, method, url string, status int, body string) error {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r1"}}}
	return check(req, nil, resp, []byte(body))
}

// TestUndeclaredEnumValuesFail: each API's response validator (the one behind every
// client apitest hands out) refuses an answer with a value outside a closed enum,
// and outside an open enum's list (x-extensible-enum), and accepts the same answer
// with a listed value, so the rejection is the enum's doing.
func TestUndeclaredEnumValuesFail(t *testing.T) {
	t.Parallel()
	pc, err := Partner(AsDeclared)
	require.NoError(t, err)
	pspec := pc.Spec()
	partner := func(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error {
		_, err := pc.Check(req, reqBody, resp, body)
		return err
	}
	oc, err := Operator(AsDeclared)
	require.NoError(t, err)
	operator := func(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error {
		_, err := oc.Check(req, reqBody, resp, body)
		return err
	}

	// The contract's own example of a transaction, with its status replaced.
	example, err := json.Marshal(pspec.Components.Responses["TransactionDetailOK"].Value.Content["application/json"].Example)
	require.NoError(t, err)
	require.Contains(t, string(example), `"status":"deposit_confirming"`)
	withStatus := func(s string) string {
		return strings.Replace(string(example), `"status":"deposit_confirming"`, `"status":"`+s+`"`, 1)
	}
	txURL := "http://h" + httpapi.BasePath + "/transactions/0b7e7f5c-3c1e-4f65-a3a8-4f3f5b8c9d10"
	errorBody := func(code string) string {
		return `{"success":false,"message":"x","error":{"code":"` + code + `","details":[],"request_id":"r1"}}`
	}
	opTxURL := "http://h" + operatorapi.BasePath + "/transactions/0b7e7f5c-3c1e-4f65-a3a8-4f3f5b8c9d10"
	audit := func(action string) string {
		return `{"success":true,"data":{"has_more":false,"limit":20,"next_cursor":null,"data":[{` +
			`"id":"6f1c0d1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f","operator_id":"7a1c0d1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f",` +
			`"operator_name":"Ada","actor":"operator","action":"` + action + `","transaction_id":"0b7e7f5c-3c1e-4f65-a3a8-4f3f5b8c9d10",` +
			`"unmatched_deposit_id":null,"batch_id":null,"subject_id":null,"subject_name":null,"partner_id":null,"partner_name":null,"partner_user_id":null,"proposer_id":null,"proposer_name":null,"cli_user":null,"reference":null,"created_at":"2026-11-25T10:00:00Z"}]}}`
	}
	auditURL := "http://h" + operatorapi.BasePath + "/audit"

	cases := []struct {
		name            string
		check           validator
		method, url     string
		status          int
		listed, unknown string
	}{
		{"partner: a transaction's status (closed enum)", partner, http.MethodGet, txURL, 200, withStatus("completed"), withStatus(undeclared)},
		{"partner: an error code (closed enum)", partner, http.MethodGet, txURL, 404, errorBody("not_found"), errorBody(undeclared)},
		{"operator: an error code (closed enum)", operator, http.MethodGet, opTxURL, 404, errorBody("not_found"), errorBody(undeclared)},
		{"operator: an audit action (open enum)", operator, http.MethodGet, auditURL, 200, audit("accept"), audit(undeclared)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, answer(t, tc.check, tc.method, tc.url, tc.status, tc.listed), "a listed value passes")
			err := answer(t, tc.check, tc.method, tc.url, tc.status, tc.unknown)
			require.Error(t, err, "a value the contract does not list fails")
			require.Contains(t, err.Error(), undeclared)
		})
	}
}

// TestEveryEnumIsChecked: in both contracts as the validators load them, every
// enum anywhere (closed, or open and closed to its list for the tests) refuses a
// value it does not list and takes each it does, and no x-extensible-enum was left
// open. With every response of the tests passing through these validators, an
// undeclared enum value in any response of either API fails the suite.
func TestEveryEnumIsChecked(t *testing.T) {
	t.Parallel()
	for name, checker := range map[string]func(Reading) (*Checker, error){"partner": Partner, "operator": Operator} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := checker(Closed)
			require.NoError(t, err)
			spec := c.Spec()
			enums, open := 0, 0
			walkSchemas(spec, func(s *openapi3.Schema) {
				if list, ok := s.Extensions[extensibleEnum].([]any); ok {
					open++
					require.ElementsMatch(t, list, s.Enum, "an open enum is checked against its list")
				}
				if len(s.Enum) == 0 {
					return
				}
				enums++
				for _, v := range s.Enum {
					require.NoError(t, s.VisitJSON(v), "listed value %v", v)
				}
				var other any = undeclared
				if s.Type.Is("integer") || s.Type.Is("number") {
					other = 987654321.0
				}
				require.Error(t, s.VisitJSON(other), "an enum of %v takes %v", s.Enum, other)
			})
			require.Positive(t, enums)
			if name == "operator" {
				require.Positive(t, open, "the operator contract has open enums (AuditAction, ProviderState)")
			}
			t.Logf("%s: %d enums checked, %d of them open", name, enums, open)
		})
	}
}
