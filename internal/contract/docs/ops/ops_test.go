package ops_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	_ "github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"partnerd/internal/chain"
	"partnerd/internal/contract/docs/ops"
	"partnerd/internal/metrics"
)

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func rules(t *testing.T, doc []byte) []rule {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(doc, &f))
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	require.NotEmpty(t, out)
	return out
}

// Every alert says how bad it is and what it is, links to its own runbook section,
// and has a promtool test in which it fires; every runbook section is an alert's.
func TestAlertsAreDocumentedAndTested(t *testing.T) {
	t.Parallel()
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	require.NoError(t, yaml.Unmarshal(ops.AlertsTestYAML, &tests))
	fires := map[string]bool{}
	for _, g := range tests.Tests {
		for _, c := range g.AlertRuleTest {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alertname] = true
			}
		}
	}
	sections := regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(ops.RunbookMD), -1)
	var headings []string
	for _, s := range sections {
		headings = append(headings, s[1])
	}

	var names []string
	for _, r := range rules(t, ops.AlertsYAML) {
		names = append(names, r.Alert)
		require.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], r.Alert)
		require.NotEmpty(t, r.Annotations["summary"], r.Alert)
		require.NotEmpty(t, r.Annotations["description"], r.Alert)
		require.Equal(t, "{{ $externalLabels.runbook_base_url }}#"+strings.ToLower(r.Alert), r.Annotations["runbook_url"], r.Alert)
		require.Contains(t, headings, r.Alert, "runbook.md has no section for %s", r.Alert)
		require.True(t, fires[r.Alert], "no promtool test sees %s fire", r.Alert)
	}
	require.ElementsMatch(t, names, headings, "runbook sections and alerts differ")
}

// promtool (Debian's prometheus package; make prometheus installs it) checks the
// rules, runs their tests, and parses every dashboard query.
func TestPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is missing: run make prometheus (Debian's prometheus package)")
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(promtool, args...).CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}
	run("check", "rules", "alerts.yml")
	run("test", "rules", "alerts_test.yml")

	// The dashboard's queries as recording rules, Grafana's variables replaced by
	// what Grafana would send, so promtool parses each one.
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".+", "$instance", ".+")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range dashboardQueries(t) {
		fmt.Fprintf(&b, "      - record: dashboard:query_%d\n        expr: %q\n", i, vars.Replace(q))
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o600))
	run("check", "rules", file)
}

// dashboardQueries returns every panel target's expression.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range dashboard(t).Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	require.NotEmpty(t, out)
	return out
}

type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
}

type dash struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func dashboard(t *testing.T) dash {
	t.Helper()
	var d dash
	require.NoError(t, json.Unmarshal(ops.DashboardJSON, &d))
	return d
}

// The dashboard linter: the rules of Grafana's dashboard-linter that apply to a
// Prometheus dashboard, so the dashboard loads on any Grafana with any data
// source name and its graphs do not lie: a data source variable every panel and
// target uses; job and instance variables every selector honours; rates over
// $__rate_interval (never shorter than two scrapes); a title, a description and a
// unit on every graph; unique panel ids and a place on the grid.
func TestDashboardLint(t *testing.T) {
	t.Parallel()
	require.Empty(t, lint(dashboard(t)))
}

// The linter finds what it is for: each rule broken once is reported.
func TestDashboardLintFails(t *testing.T) {
	t.Parallel()
	cases := map[string]func(d *dash){
		"panel-datasource": func(d *dash) { d.Panels[1].Datasource.UID = "P1809F7CD0C75ACF3" },
		"target-job": func(d *dash) {
			d.Panels[1].Targets[0].Expr = strings.ReplaceAll(d.Panels[1].Targets[0].Expr, `job=~"$job", `, "")
		},
		"target-rate-interval": func(d *dash) {
			d.Panels[1].Targets[0].Expr = strings.ReplaceAll(d.Panels[1].Targets[0].Expr, "$__rate_interval", "1m")
		},
		"panel-title-description": func(d *dash) { d.Panels[2].Description = "" },
		"panel-units":             func(d *dash) { d.Panels[2].FieldConfig.Defaults.Unit = "" },
		"unique-ids":              func(d *dash) { d.Panels[2].ID = d.Panels[1].ID },
		"template-datasource":     func(d *dash) { d.Templating.List = d.Templating.List[1:] },
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := dashboard(t)
			breakIt(&d)
			problems := lint(d)
			require.NotEmpty(t, problems)
			require.True(t, slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, name) }), "%v", problems)
		})
	}
}

var (
	rateCall  = regexp.MustCompile(`\b(rate|irate|increase|delta|deriv|changes)\(([^()]|\([^()]*\))*?\[([^\]]+)\]`)
	selectors = regexp.MustCompile(`\b((?:partnerd|go_sql)_[a-z_]+)(\{[^}]*\})?`)
)

func lint(d dash) []string {
	var out []string
	add := func(rule, format string, args ...any) { out = append(out, rule+": "+fmt.Sprintf(format, args...)) }
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		add("template-datasource", "no data source variable named datasource")
	}
	for _, v := range []string{"job", "instance"} {
		if vars[v] != "query" {
			add("template-"+v, "no query variable %s", v)
		}
	}
	if d.UID == "" || d.Title == "" {
		add("dashboard", "a uid and a title are required")
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			add("unique-ids", "panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil {
			add("grid", "panel %q has no gridPos", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Description == "" {
			add("panel-title-description", "panel %d needs a title and a description", p.ID)
		}
		if p.FieldConfig.Defaults.Unit == "" {
			add("panel-units", "panel %q has no unit", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			add("panel-datasource", "panel %q does not use ${datasource}", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
				add("panel-datasource", "a target of %q does not use ${datasource}", p.Title)
			}
			for _, m := range rateCall.FindAllStringSubmatch(tg.Expr, -1) {
				if m[3] != "$__rate_interval" {
					add("target-rate-interval", "%q: %s over [%s], not [$__rate_interval]", p.Title, m[1], m[3])
				}
			}
			for _, m := range selectors.FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.Contains(m[2], `job=~"$job"`) {
					add("target-job", "%q: %s without job=~\"$job\"", p.Title, m[1])
				}
				if !strings.Contains(m[2], `instance=~"$instance"`) {
					add("target-instance", "%q: %s without instance=~\"$instance\"", p.Title, m[1])
				}
			}
		}
	}
	return out
}

// exported returns the names of the metric families the service exports, with
// every collector made to produce a series: the HTTP middleware after a request,
// the chain watcher's series for a network, the scrape-time gauges with a source.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New()
	e := echo.New()
	e.Use(m.HTTPMiddleware())
	e.GET("/x", func(c echo.Context) error { return c.NoContent(http.StatusOK) })
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil))
	m.TransactionCreated("usdt", "bep20")
	m.Transition("completed")
	m.WebhookAttempt(metrics.OutcomeSuccess, time.Second)
	m.DeliveryLag(time.Second)
	m.QueueDepth(func(context.Context) (float64, error) { return 1, nil })
	m.Screened("bep20", "clear")
	m.ObserveOperations(func(context.Context) (metrics.Operations, error) {
		return metrics.Operations{Stages: map[string]float64{"failed": 1}, RefundWork: map[string]float64{"dust": 1},
			Screening: map[string]float64{"held": 1}}, nil
	})
	m.ObserveApprovals(func(context.Context) (int, time.Duration, error) { return 1, time.Hour, nil })
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "names.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	m.ObserveDatabase(db)
	c := m.Chain()
	c.Watch("bep20")
	c.ChainHead("bep20", 10)
	c.ChainScanned("bep20", 9)
	c.ChainFinalized("bep20", 8)
	c.ChainFinality("bep20", chain.FinalityTag)
	c.ChainProviders("bep20", []chain.ProviderState{{Name: "https://p.example", State: chain.ProviderActive}})
	c.ChainRPCError("bep20", "timeout")
	c.UnmatchedDeposit("bep20")

	fams, err := m.Registry().Gather()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, f := range fams {
		out[f.GetName()] = true
	}
	return out
}

// used returns every service metric the rules and the dashboard read.
func used(t *testing.T, alerts []byte) []string {
	t.Helper()
	var out []string
	for _, r := range rules(t, alerts) {
		out = append(out, ops.MetricNames(r.Expr)...)
	}
	for _, q := range dashboardQueries(t) {
		out = append(out, ops.MetricNames(q)...)
	}
	for _, v := range dashboard(t).Templating.List {
		if s, ok := v.Query.(map[string]any); ok {
			out = append(out, ops.MetricNames(fmt.Sprint(s["query"]))...)
		}
	}
	return out
}

// Every metric a rule or a panel reads is one the service exports: a rename in
// internal/metrics without the rules and dashboard fails here, not in production
// as an alert that can never fire.
func TestRulesAndDashboardReadExportedMetrics(t *testing.T) {
	t.Parallel()
	names := used(t, ops.AlertsYAML)
	require.Contains(t, names, "partnerd_database_up")
	require.Contains(t, names, "go_sql_in_use_connections")
	require.Empty(t, ops.Unknown(names, exported(t)))
}

// The check fails on a rename from either side: the service no longer exporting a
// name a rule reads, and a rule reading a name the service never exported.
func TestRenamedMetricFailsTheCheck(t *testing.T) {
	t.Parallel()
	have := exported(t)
	delete(have, "partnerd_database_up")
	require.Equal(t, []string{"partnerd_database_up"}, ops.Unknown(used(t, ops.AlertsYAML), have))

	renamed := strings.ReplaceAll(string(ops.AlertsYAML), "partnerd_chain_scanned_block", "partnerd_chain_scanned_blocks")
	require.Equal(t, []string{"partnerd_chain_scanned_blocks"}, ops.Unknown(used(t, []byte(renamed)), exported(t)))
}

func TestMetricNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"partnerd_http_request_duration_seconds_bucket", "partnerd_http_requests_total"},
		ops.MetricNames(`histogram_quantile(0.95, sum by (le) (rate(partnerd_http_request_duration_seconds_bucket{url="partnerd_x"}[5m])))
		/ on() sum(rate(partnerd_http_requests_total{code=~"5.."}[5m])) + up{job="partnerd_fake"}`))
	require.Equal(t, []string{"partnerd_a"}, ops.Unknown([]string{"partnerd_a", "partnerd_h_bucket", "partnerd_h_count", "partnerd_b"},
		map[string]bool{"partnerd_h": true, "partnerd_b": true}))
}
