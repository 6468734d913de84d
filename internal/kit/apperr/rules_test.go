package apperr_test

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/gen/api"
	"partnerd/gen/operatorapi"
	"partnerd/internal/httpkit"
	"partnerd/internal/kit/apperr"
)

// codes is every code the package declares, spelled out here so that a code added to
// one side only (the package or the contract) fails TestCodesAreTheContractsEnum.
var codes = []apperr.Code{
	apperr.InvalidRequest, apperr.IdempotencyKeyMissing, apperr.InvalidCursor, apperr.Unauthorized,
	apperr.NotFound, apperr.MethodNotAllowed, apperr.DuplicateMerchantReference, apperr.InvalidStateTransition,
	apperr.IdempotencyRequestInProgress, apperr.QuoteAlreadyUsed, apperr.PayloadTooLarge, apperr.UnsupportedMediaType,
	apperr.IdempotencyKeyReused, apperr.QuoteExpired, apperr.QuoteMismatch, apperr.UnsupportedPair,
	apperr.AmountOutOfRange, apperr.WebhookURLNotAllowed, apperr.RateLimited, apperr.Internal,
	apperr.RatesUnavailable, apperr.ServiceUnavailable,
}

// operatorOnly are the operator API's own codes: its contract lists them beside the
// partner API's, in a table of their own.
var operatorOnly = []apperr.Code{apperr.Forbidden, apperr.ApprovalClosed}

// The codes are exactly the contracts' ErrorCode enums: the partner API's, and the
// operator API's, which adds its own: no code a client cannot program against, no
// enum value the service never sends.
func TestCodesAreTheContractsEnum(t *testing.T) {
	t.Parallel()
	spec, err := api.GetSpec()
	require.NoError(t, err)
	var enum []string
	for _, v := range spec.Components.Schemas["ErrorCode"].Value.Enum {
		enum = append(enum, v.(string))
	}
	var ours []string
	for _, c := range codes {
		ours = append(ours, string(c))
		require.True(t, api.ErrorCode(c).Valid(), c)
	}
	require.ElementsMatch(t, enum, ours)

	ospec, err := operatorapi.GetSwagger()
	require.NoError(t, err)
	var oenum []string
	for _, v := range ospec.Components.Schemas["ErrorCode"].Value.Enum {
		oenum = append(oenum, v.(string))
	}
	for _, c := range operatorOnly {
		ours = append(ours, string(c))
	}
	require.ElementsMatch(t, oenum, ours)

	// The operator API's own codes have the status its table gives them.
	row := regexp.MustCompile("(?m)^\\s*\\|\\s*(\\d{3})\\s*\\|\\s*`([a-z_]+)`\\s*\\|")
	table := map[apperr.Code]int{}
	for _, m := range row.FindAllStringSubmatch(ospec.Components.Schemas["ErrorCode"].Value.Description, -1) {
		s, _ := strconv.Atoi(m[1])
		table[apperr.Code(m[2])] = s
	}
	require.Len(t, table, len(operatorOnly))
	for _, c := range operatorOnly {
		require.Equal(t, table[c], httpkit.StatusOf(c), c)
	}
}

// Every code has the HTTP status the contract's error table gives it (the table in
// the partner API's introduction, read here from the embedded contract), so a code
// means the same on every endpoint and none falls through to 500 by omission.
func TestEveryCodeHasTheContractsStatus(t *testing.T) {
	t.Parallel()
	spec, err := api.GetSpec()
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\s*\\|\\s*(\\d{3})\\s*\\|\\s*`([a-z_]+)`\\s*\\|")
	table := map[apperr.Code]int{}
	for _, m := range row.FindAllStringSubmatch(spec.Info.Description, -1) {
		s, _ := strconv.Atoi(m[1])
		table[apperr.Code(m[2])] = s
	}
	require.Len(t, table, len(codes), "the contract's error table has one row per code")
	for _, c := range codes {
		t.Run(string(c), func(t *testing.T) {
			t.Parallel()
			want, ok := table[c]
			require.True(t, ok, "the contract's error table lists %s", c)
			require.Equal(t, want, httpkit.StatusOf(c))
			if c != apperr.Internal {
				require.NotEqual(t, http.StatusInternalServerError, httpkit.StatusOf(c))
			}
		})
	}
	require.Equal(t, http.StatusInternalServerError, httpkit.StatusOf("no_such_code"), "an unknown code is a 500")
}

func TestCodeOfAndAs(t *testing.T) {
	t.Parallel()
	quoteExpired := apperr.New(apperr.QuoteExpired, "The quote has expired.")
	cases := []struct {
		name string
		err  error
		code apperr.Code
		ok   bool
	}{
		{"an *Error", quoteExpired, apperr.QuoteExpired, true},
		{"wrapped once", fmt.Errorf("create: %w", quoteExpired), apperr.QuoteExpired, true},
		{"wrapped in a join", errors.Join(errors.New("rollback failed"), fmt.Errorf("x: %w", quoteExpired)), apperr.QuoteExpired, true},
		{"a plain error", errors.New("connection reset"), apperr.Internal, false},
		{"nil", nil, apperr.Internal, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.code, apperr.CodeOf(c.err))
			e, ok := apperr.As(c.err)
			require.Equal(t, c.ok, ok)
			if ok {
				require.Same(t, quoteExpired, e)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  *apperr.Error
		want string
	}{
		{"no detail", apperr.New(apperr.NotFound, "No such transaction."), "not_found: No such transaction."},
		{"the first detail", &apperr.Error{Code: apperr.InvalidRequest, Message: "Bad.", Details: []apperr.Detail{
			{Field: "/fiat_amount", Message: "not a decimal"}, {Field: "/token", Message: "unknown"}}},
			"invalid_request: Bad. (/fiat_amount: not a decimal)"},
		{"Field", apperr.Field(apperr.QuoteMismatch, "Other pair.", "/quote_id", "token differs"), "quote_mismatch: Other pair. (/quote_id: token differs)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, c.err.Error())
		})
	}
	f := apperr.Field(apperr.InvalidRequest, "m", "/f", "p")
	require.Equal(t, []apperr.Detail{{Field: "/f", Message: "p"}}, f.Details)
	require.Zero(t, f.RetryAfterSeconds)
}
