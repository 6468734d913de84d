// Package ops holds what operators load next to the binary: the Prometheus alert
// rules (alerts.yml, tested by alerts_test.yml with promtool), the runbook the
// rules link to (runbook.md) and the Grafana dashboard (dashboard.json). They are
// embedded so the checks that keep them true to the service (every metric they
// name is one the service exports) read the very files operators load.
package ops

import (
	_ "embed"
	"regexp"
	"slices"
	"strings"
)

// AlertsYAML is alerts.yml, the alert rules.
//
//go:embed alerts.yml
var AlertsYAML []byte

// AlertsTestYAML is alerts_test.yml, promtool's tests of the rules.
//
//go:embed alerts_test.yml
var AlertsTestYAML []byte

// RunbookMD is runbook.md, one section per alert.
//
//go:embed runbook.md
var RunbookMD []byte

// DashboardJSON is dashboard.json, the Grafana dashboard.
//
//go:embed dashboard.json
var DashboardJSON []byte

// metricPrefixes are the prefixes of the names the service exports and rules may
// read: its own series, and the database pool's. Names with other prefixes
// (Prometheus's own up, say) are not the service's to check.
var metricPrefixes = []string{"partnerd_", "go_sql_"}

var (
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	ident  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// MetricNames returns the metric names a PromQL expression reads, those with one
// of the service's prefixes, sorted and without repeats. Quoted strings (label
// values, regular expressions) are skipped, so a label value that looks like a
// name is not taken for one; label names never carry the prefixes.
func MetricNames(expr string) []string {
	expr = quoted.ReplaceAllString(expr, `""`)
	var out []string
	for _, id := range ident.FindAllString(expr, -1) {
		for _, p := range metricPrefixes {
			if strings.HasPrefix(id, p) && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Unknown returns the names in used that exported does not hold, sorted: the
// metrics a rule or panel reads that the service no longer exports (renamed or
// removed), which would make the alert silently never fire. A histogram's
// _bucket, _sum and _count series count as exported with their family.
func Unknown(used []string, exported map[string]bool) []string {
	var out []string
	for _, n := range used {
		if exported[n] {
			continue
		}
		base, found := "", false
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok {
				base, found = b, true
				break
			}
		}
		if found && exported[base] {
			continue
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
