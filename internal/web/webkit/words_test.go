package webkit

import (
	"html/template"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

// Amounts read grouped in thousands with every decimal the API sent; anything
// that is not a decimal is shown as it came.
func TestAmount(t *testing.T) {
	for in, want := range map[any]string{
		"0": "0", "12.5": "12.5", "999.99": "999.99", "1000": "1,000", "25000.75": "25,000.75",
		"1234567.891234": "1,234,567.891234", "-1234.50": "-1,234.50", "+100000": "100,000",
		"123456789012345678901234567890.000000000000000001": "123,456,789,012,345,678,901,234,567,890.000000000000000001",
		"": "", "n/a": "n/a", "1e6": "1e6", decimal.RequireFromString("7500.50"): "7,500.5",
	} {
		require.Equal(t, want, Amount(in), "%v", in)
	}
	s := "5000.00"
	require.Equal(t, "5,000.00", Amount(&s), "through a pointer")
	require.Empty(t, Amount((*string)(nil)))
}

// States and reasons read in words from the one table; an unknown code reads
// as its words; a pointer reads as what it points at, never as an address.
func TestStatesAndReasonsInWords(t *testing.T) {
	type status string
	from := status("awaiting_deposit")
	require.Equal(t, "waiting for the deposit", StateWords(from))
	require.Equal(t, "waiting for the deposit", StateWords(&from), "a pointer's value, not its address")
	require.Equal(t, "sold, settling", StateWords("order_filled"))
	require.Equal(t, "something new", StateWords("something_new"))
	require.Empty(t, StateWords((*status)(nil)))
	require.Equal(t, "part of the amount received", Reason("deposit:partial"))
	require.Equal(t, "USDT sold", Reason("order:filled"))
	require.Equal(t, "operator: did something", Reason("operator:did_something"))
	require.Equal(t, "created as waiting for the deposit", Change((*status)(nil), "awaiting_deposit"))
	require.Equal(t, "still waiting for the deposit", Change(&from, "awaiting_deposit"))
	require.Equal(t, "deposit confirming → sold, settling", Change("deposit_confirming", "order_filled"))
	require.Equal(t, "awaiting deposit", Funcs()["words"].(func(any) string)(&from))
}

// A refusal shows its words, its detail folded beneath them; both escaped.
func TestProblemFoldsItsDetail(t *testing.T) {
	got := problemHTML(Problem{Words: "The amount <is> wrong.", Detail: "invalid_request, HTTP 400"})
	require.Equal(t, template.HTML(`The amount &lt;is&gt; wrong.<details class="detail"><summary>Details</summary><code>invalid_request, HTTP 400</code></details>`), got)
	require.Equal(t, template.HTML("plain &amp; simple"), problemHTML("plain & simple"))
	p := APIError(422, []byte(`{"success":false,"message":"Quote expired.","error":{"code":"quote_expired","details":[{"field":"quote_id","message":"too old"}]}}`))
	require.Equal(t, Problem{Words: "Quote expired. (quote_id: too old)", Detail: "quote_expired, HTTP 422"}, p)
	require.Equal(t, "HTTP 502", APIError(502, nil).Detail)
}

// Counts read as people write them; partners sharing a name are told apart by
// their ids, the others are named alone.
func TestCountAndPartnerLabel(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 transaction", Count(1, "transaction"))
	require.Equal(t, "0 transactions", Count(0, "transaction"))
	require.Equal(t, "3 addresses", Count(3, "address", "addresses"))
	same := map[string]int{"Acme Pay": 2, "Solo": 1}
	require.Equal(t, "Acme Pay · 3f2a9c1e", PartnerLabel("Acme Pay", "3f2a9c1e-0000-4000-8000-000000000000", same))
	require.Equal(t, "Solo", PartnerLabel("Solo", "77b0d4aa-0000-4000-8000-000000000000", same))
}
