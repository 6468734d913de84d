package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Outcomes of one operation.
const (
	Pass = "pass" // exercised, every answer conformed and came as the walk expected
	Fail = "fail" // an answer broke the contract, or the walk got an answer it did not expect
	Skip = "skip" // not exercised against a deployment; Reason says why
)

// Result is what the check found for one operation of a contract.
type Result struct {
	// API is "partner" or "operator".
	API       string `json:"api"`
	Operation string `json:"operation"`
	Method    string `json:"method"`
	// Path is the contract's path template, without the API's base path.
	Path    string `json:"path"`
	Outcome string `json:"outcome"`
	// Calls is how many requests were sent; Statuses the distinct statuses answered.
	Calls    int   `json:"calls"`
	Statuses []int `json:"statuses"`
	// Violations are the answers that broke the contract (status, headers or body).
	Violations []string `json:"violations,omitempty"`
	// Problems are answers the walk did not expect (a conforming 409 where a 200
	// was due, a request that failed), which stop it from exercising what follows.
	Problems []string `json:"problems,omitempty"`
	// Reason says why an operation was skipped.
	Reason string `json:"reason,omitempty"`
	// Notes say what a passing operation's answers mean where the walk took
	// the deployment's own settings into account (a refusal checked instead of
	// a success the deployment does not allow).
	Notes []string `json:"notes,omitempty"`
}

// Report is one run of the check.
type Report struct {
	BaseURL string `json:"base_url"`
	// Prefix starts the merchant reference of every transaction the run created.
	Prefix  string   `json:"merchant_reference_prefix"`
	Results []Result `json:"results"`
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	Skipped int      `json:"skipped"`
}

// OK reports whether no operation failed.
func (r *Report) OK() bool { return r.Failed == 0 }

// Result returns the result of operation op of api, or nil.
func (r *Report) Result(api, op string) *Result {
	for i := range r.Results {
		if r.Results[i].API == api && r.Results[i].Operation == op {
			return &r.Results[i]
		}
	}
	return nil
}

// WriteText prints one line per operation (API, operation, method and path,
// outcome, statuses seen, and the first violation, problem or skip reason), the
// further violations indented below, and a summary line.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "API\tOPERATION\tREQUEST\tRESULT\tSTATUSES\tDETAIL\n")
	for _, res := range r.Results {
		notes := append(slices.Clone(res.Violations), res.Problems...)
		detail := res.Reason
		if res.Outcome == Pass && len(res.Notes) > 0 {
			detail = strings.Join(res.Notes, "; ")
		}
		if len(notes) > 0 {
			detail = notes[0]
		}
		outcome := res.Outcome
		if outcome == Fail {
			outcome = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\t%s\n", res.API, res.Operation, res.Method, res.Path, outcome, statuses(res.Statuses), oneLine(detail))
		for _, n := range notes[min(1, len(notes)):] {
			fmt.Fprintf(tw, "\t\t\t\t\t%s\n", oneLine(n))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "conforms"
	if !r.OK() {
		verdict = "DOES NOT CONFORM"
	}
	_, err := fmt.Fprintf(w, "\n%d operations: %d passed, %d failed, %d skipped; %s %s (its transactions' merchant references start with %s)\n",
		len(r.Results), r.Passed, r.Failed, r.Skipped, r.BaseURL, verdict, r.Prefix)
	return err
}

// WriteJSON writes the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func statuses(s []int) string {
	if len(s) == 0 {
		return "-"
	}
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

// oneLine folds a message onto one line and bounds its length, for the table.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
