// Command benchscale times every partner API read, operator API read, console page
// and export against two partnerd servers, one on a small database and one on a
// large one of the same shape, and prints one line a read:
//
//	read=NAME small_p50_ms=… large_p50_ms=… ratio=…
//
// A read whose time grows with the database (a sequential scan, a sort of every
// row, a count in Go) shows as a ratio well above 1; one served by an index stays
// near 1 whatever the size. The two servers are asked in turn, request by request,
// so both are measured in the same minutes under the same machine load.
//
// scripts/benchscale.sh seeds the databases, starts the servers and runs it twice:
// once to time (-out keeps the results), then with -explain against a third server
// on the large database whose connections run auto_explain, to print the plan of
// every statement of each read above the threshold.
//
// Exports are compared at the same number of lines: the windows are chosen on each
// database to hold the same count of rows, so an export that streams through an
// index costs the same per line on both.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// side is one server and its database, as benchscale.sh describes it in a JSON file.
type side struct {
	Name        string `json:"name"`
	Base        string `json:"base"`
	DB          string `json:"db"`
	PartnerID   string `json:"partner_id"`
	PartnerKey  string `json:"partner_key"`
	OperatorKey string `json:"operator_key"`

	client  *http.Client
	cookies map[string]string // the console session (kept by hand: cookies may be Secure)
	s       samples
}

// samples are the ids and windows each read asks for, picked on each database alike.
type samples struct {
	PartnerID                                         string // the largest partner
	TxID, Reference, Address, Hash, PayoutID, EventID string
	RecentTxID                                        string // a week old, with its webhook events (kept 30 days)
	Deep                                              string // 180 days ago: a page deep in the year
	ExportFrom, PayoutsFrom                           string // windows holding the same number of rows on both
	ExportLines, PayoutLines                          int
}

// read is one request: its name, path (with samples filled in) and credential.
type read struct {
	name   string
	auth   string // partner, operator or console
	path   func(s samples) string
	export bool
}

func main() {
	smallConf := flag.String("small", "", "JSON file describing the small side")
	largeConf := flag.String("large", "", "JSON file describing the large side")
	reps := flag.Int("reps", 15, "timed requests per read and side")
	budget := flag.Duration("budget", 20*time.Second, "stop a read's repetitions (after 3) once a side has spent this long")
	only := flag.String("only", "", "only the reads whose name matches this regular expression")
	out := flag.String("out", "", "append each result as a JSON line to this file")
	exportRows := flag.Int("export-rows", 2000, "rows in each export window (fewer when the small database has fewer)")
	explain := flag.String("explain", "", "comma-separated reads to replay once against -explain-base and print the plans of")
	explainBase := flag.String("explain-base", "", "a server on the large database whose connections run auto_explain")
	pgLog := flag.String("pglog", "", "the PostgreSQL server log auto_explain writes to")
	flag.Parse()

	ctx := context.Background()
	small, large := load(*smallConf), load(*largeConf)
	exportN := pick(ctx, small, *exportRows)
	for _, sd := range []*side{small, large} {
		sd.s = sampleOf(ctx, sd, exportN)
	}
	reads := catalogue()

	if *explain != "" {
		large.Base = *explainBase
		signIn(large)
		names := strings.Split(*explain, ",")
		for _, r := range reads {
			if slices.Contains(names, r.name) {
				plans(large, r, *pgLog)
			}
		}
		return
	}

	signIn(small)
	signIn(large)
	var re *regexp.Regexp
	if *only != "" {
		re = regexp.MustCompile(*only)
	}
	var sink io.Writer = io.Discard
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		sink = f
	}
	for _, r := range reads {
		if re != nil && !re.MatchString(r.name) {
			continue
		}
		res := measure(small, large, r, *reps, *budget)
		fmt.Println(res.line())
		_ = json.NewEncoder(sink).Encode(res)
	}
}

func load(path string) *side {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	var s side
	if err := json.Unmarshal(b, &s); err != nil {
		log.Fatalf("%s: %v", path, err)
	}
	s.client = &http.Client{Timeout: 10 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s.cookies = map[string]string{}
	return &s
}

// pick returns how many of the largest partner's rows an export window holds: want,
// or nine tenths of what the small database has when that is fewer.
func pick(ctx context.Context, sd *side, want int) int {
	c := connect(ctx, sd)
	defer c.Close(ctx)
	var n int
	must(c.QueryRow(ctx, `SELECT count(*) FROM operator_batch_items i JOIN operator_batches b ON b.id = i.batch_id
		WHERE b.partner_id = $1 AND b.kind = 'payout'`, sd.PartnerID).Scan(&n))
	return min(want, n*9/10)
}

func connect(ctx context.Context, sd *side) *pgx.Conn {
	c, err := pgx.Connect(ctx, sd.DB)
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// sampleOf picks on sd's database: a paid, completed transaction of the largest
// partner from about half a year ago (with its deposit's hash, its payout and an
// event), and the export windows holding n rows.
func sampleOf(ctx context.Context, sd *side, n int) samples {
	c := connect(ctx, sd)
	defer c.Close(ctx)
	s := samples{PartnerID: sd.PartnerID}
	must(c.QueryRow(ctx, `SELECT t.id::text, t.merchant_reference, t.deposit_address, d.chain_hash, i.batch_id::text
		FROM transactions t JOIN deposits d ON d.transaction_id = t.id
		JOIN operator_batch_items i ON i.transaction_id = t.id AND i.kind = 'payout'
		WHERE t.partner_id = $1 AND t.created_at < now() - interval '180 days'
		ORDER BY t.created_at DESC, t.id DESC LIMIT 1`, sd.PartnerID).Scan(&s.TxID, &s.Reference, &s.Address, &s.Hash, &s.PayoutID))
	must(c.QueryRow(ctx, `SELECT id::text, transaction_id::text FROM events WHERE partner_id = $1
		AND created_at < now() - interval '7 days' ORDER BY created_at DESC, id DESC LIMIT 1`, sd.PartnerID).Scan(&s.EventID, &s.RecentTxID))
	s.Deep = time.Now().UTC().AddDate(0, 0, -180).Format(time.RFC3339)
	var from time.Time
	must(c.QueryRow(ctx, `SELECT created_at FROM transactions WHERE partner_id = $1
		ORDER BY created_at DESC, id DESC OFFSET $2 - 1 LIMIT 1`, sd.PartnerID, n).Scan(&from))
	s.ExportFrom, s.ExportLines = from.UTC().Format(time.RFC3339Nano), n
	// The newest payouts whose transactions add up to n (or just past it).
	must(c.QueryRow(ctx, `SELECT min(created_at), max(total) FROM (
			SELECT b.created_at, sum(count(*)) OVER (ORDER BY b.created_at DESC, b.id DESC) AS total,
			       sum(count(*)) OVER (ORDER BY b.created_at DESC, b.id DESC) - count(*) AS before
			FROM operator_batches b JOIN operator_batch_items i ON i.batch_id = b.id
			WHERE b.partner_id = $1 AND b.kind = 'payout' GROUP BY b.id, b.created_at) x
		WHERE before < $2`, sd.PartnerID, n).Scan(&from, &s.PayoutLines))
	s.PayoutsFrom = from.UTC().Format(time.RFC3339Nano)
	return s
}

// catalogue is every read timed, in the order printed: the partner API, the
// operator API, the console, then the exports.
func catalogue() []read {
	p := func(name, path string) read {
		return read{name: name, auth: "partner", path: func(s samples) string { return "/api/v1/partner" + fill(path, s) }}
	}
	o := func(name, path string) read {
		return read{name: name, auth: "operator", path: func(s samples) string { return "/api/v1/operator" + fill(path, s) }}
	}
	c := func(name, path string) read {
		return read{name: name, auth: "console", path: func(s samples) string { return "/console" + fill(path, s) }}
	}
	export := func(r read) read { r.export = true; return r }
	return []read{
		p("partner_transaction", "/transactions/{tx}"),
		p("partner_by_reference", "/transactions/reference/{ref}"),
		p("partner_history", "/transactions/{tx}/status-history"),
		p("partner_list", "/transactions?limit=20"),
		p("partner_list_100", "/transactions?limit=100"),
		p("partner_list_deep", "/transactions?limit=20&to={deep}"),
		p("partner_list_refunded", "/transactions?limit=20&status=refunded"),
		p("partner_list_merchant", "/transactions?limit=20&merchant_id=M-7"),
		p("partner_list_hash", "/transactions?tx_hash={hash}"),
		p("partner_list_address", "/transactions?deposit_address={address}"),
		p("partner_revenue", "/revenue?limit=20"),
		p("partner_revenue_summary", "/revenue?limit=20&include_summary=true&from={deep}"),
		p("partner_payouts", "/payouts?limit=20"),
		p("partner_payout", "/payouts/{payout}"),
		p("partner_events", "/webhooks/events?limit=20"),
		p("partner_events_failed", "/webhooks/events?limit=20&publish_status=failed"),
		p("partner_events_of_tx", "/webhooks/events?transaction_id={recent_tx}"),
		p("partner_event", "/webhooks/events/{event}"),
		p("partner_endpoint", "/webhooks/endpoint"),

		o("operator_transaction", "/transactions/{tx}"),
		o("operator_list", "/transactions?limit=20"),
		o("operator_list_oldest", "/transactions?limit=20&order=oldest"),
		o("operator_list_partner", "/transactions?limit=20&partner_id={partner}"),
		o("operator_list_deep", "/transactions?limit=20&to={deep}"),
		o("operator_awaiting_fill", "/transactions?limit=20&stage=awaiting_fill"),
		o("operator_awaiting_settlement", "/transactions?limit=20&stage=awaiting_settlement"),
		o("operator_awaiting_payout", "/transactions?limit=20&stage=awaiting_payout"),
		o("operator_awaiting_payout_oldest", "/transactions?limit=20&stage=awaiting_payout&order=oldest"),
		o("operator_failed", "/transactions?limit=20&stage=failed"),
		o("operator_confirming_too_long", "/transactions?limit=20&stage=confirming_too_long"),
		o("operator_search_reference", "/transactions?q={ref}"),
		o("operator_search_address", "/transactions?q={address}"),
		o("operator_search_hash", "/transactions?q={hash}"),
		o("operator_search_id", "/transactions?q={tx}"),
		o("operator_overview", "/overview"),
		o("operator_unmatched", "/deposits/unmatched?limit=20"),
		o("operator_refund_tasks", "/refund-tasks?limit=20"),
		o("operator_refund_tasks_resolved", "/refund-tasks?limit=20&status=resolved"),
		o("operator_screening", "/screening/reviews"),
		o("operator_audit", "/audit?limit=20"),
		o("operator_audit_of_tx", "/audit?transaction_id={tx}"),
		o("operator_payouts", "/payouts?limit=20"),
		o("operator_payouts_partner", "/payouts?limit=20&partner_id={partner}"),
		o("operator_fills", "/fills?limit=20"),
		o("operator_partners", "/partners"),
		o("operator_operators", "/operators"),
		o("operator_approvals", "/approvals?limit=20"),

		c("console_overview", "/"),
		c("console_list", "/transactions"),
		c("console_awaiting_payout", "/transactions?stage=awaiting_payout"),
		c("console_search", "/transactions?q={ref}"),
		c("console_transaction", "/transactions/{tx}"),
		c("console_deposits", "/deposits"),
		c("console_refund_tasks", "/refund-tasks"),
		c("console_screening", "/screening"),
		c("console_partners", "/partners"),
		c("console_partner", "/partners/{partner}"),
		c("console_payout_form", "/payouts/new?partner_id={partner}"),
		c("console_fill_form", "/fills/new"),
		c("console_audit", "/audit"),
		c("console_operators", "/operators"),
		c("console_approvals", "/approvals"),

		export(p("export_transactions", "/exports/transactions?from={export_from}")),
		export(p("export_payouts", "/exports/payouts?from={payouts_from}")),
		export(c("console_transactions_csv_awaiting_payout", "/transactions.csv?stage=awaiting_payout")),
		export(c("console_deposits_csv", "/deposits.csv")),
		export(c("console_refund_tasks_csv", "/refund-tasks.csv")),
	}
}

// fill puts a side's samples into path's {placeholders}, query-escaped.
func fill(path string, s samples) string {
	return strings.NewReplacer(
		"{partner}", s.PartnerID, "{tx}", s.TxID, "{recent_tx}", s.RecentTxID, "{ref}", url.QueryEscape(s.Reference), "{address}", url.QueryEscape(s.Address),
		"{hash}", url.QueryEscape(s.Hash), "{payout}", s.PayoutID, "{event}", s.EventID,
		"{deep}", url.QueryEscape(s.Deep), "{export_from}", url.QueryEscape(s.ExportFrom),
		"{payouts_from}", url.QueryEscape(s.PayoutsFrom),
	).Replace(path)
}

// result is one read's timings on both sides.
type result struct {
	Read     string  `json:"read"`
	SmallP50 float64 `json:"small_p50_ms"`
	LargeP50 float64 `json:"large_p50_ms"`
	Ratio    float64 `json:"ratio"`
	SmallN   int     `json:"small_requests"`
	LargeN   int     `json:"large_requests"`
	// SmallLines and LargeLines are what each answer held: an export's lines, a
	// list's items (a JSON page's data, a console table's rows). A list shorter on
	// the small database (a stage of the last day holds a row or two of its 10,000
	// transactions) makes the ratio one of page sizes, not of database sizes.
	SmallLines int    `json:"small_lines,omitempty"`
	LargeLines int    `json:"large_lines,omitempty"`
	Export     bool   `json:"export,omitempty"`
	Error      string `json:"error,omitempty"`
}

func (r result) line() string {
	if r.Error != "" {
		return fmt.Sprintf("read=%s error=%q", r.Read, r.Error)
	}
	s := fmt.Sprintf("read=%s small_p50_ms=%.2f large_p50_ms=%.2f ratio=%.2f", r.Read, r.SmallP50, r.LargeP50, r.Ratio)
	switch {
	case r.Export:
		s += fmt.Sprintf(" small_lines=%d large_lines=%d", r.SmallLines, r.LargeLines)
	case r.SmallLines != r.LargeLines:
		s += fmt.Sprintf(" small_items=%d large_items=%d", r.SmallLines, r.LargeLines)
	}
	return s
}

// measure sends r to both sides in turn (the order swapped every round), after one
// untimed request each, until reps rounds or, past three, the budget.
func measure(small, large *side, r read, reps int, budget time.Duration) result {
	res := result{Read: r.name, Export: r.export}
	for _, sd := range []*side{small, large} {
		_, lines, err := do(sd, r)
		if err != nil {
			res.Error = sd.Name + ": " + err.Error()
			return res
		}
		if sd == small {
			res.SmallLines = lines
		} else {
			res.LargeLines = lines
		}
	}
	var ts, tl []time.Duration
	var spentS, spentL time.Duration
	for i := range reps {
		if i >= 3 && (spentS > budget || spentL > budget) {
			break
		}
		order := []*side{small, large}
		if i%2 == 1 {
			order = []*side{large, small}
		}
		for _, sd := range order {
			d, _, err := do(sd, r)
			if err != nil {
				res.Error = sd.Name + ": " + err.Error()
				return res
			}
			if sd == small {
				ts, spentS = append(ts, d), spentS+d
			} else {
				tl, spentL = append(tl, d), spentL+d
			}
		}
	}
	res.SmallP50, res.LargeP50 = p50(ts), p50(tl)
	res.SmallN, res.LargeN = len(ts), len(tl)
	if res.SmallP50 > 0 {
		res.Ratio = res.LargeP50 / res.SmallP50
	}
	return res
}

func p50(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	var m time.Duration
	if n := len(ds); n%2 == 1 {
		m = ds[n/2]
	} else {
		m = (ds[n/2-1] + ds[n/2]) / 2
	}
	return float64(m.Microseconds()) / 1000
}

// do sends r to sd and reads the whole answer: the time to the last byte and the
// number of lines (an export's rows, with its header).
func do(sd *side, r read) (time.Duration, int, error) {
	req, err := http.NewRequest(http.MethodGet, sd.Base+r.path(sd.s), nil)
	if err != nil {
		return 0, 0, err
	}
	switch r.auth {
	case "partner":
		req.Header.Set("X-API-KEY", sd.PartnerKey)
	case "operator":
		req.Header.Set("X-API-KEY", sd.OperatorKey)
	case "console":
		req.Header.Set("Cookie", sd.cookieHeader())
	}
	t0 := time.Now()
	res, err := sd.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	d := time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET %s: %d %.300s", req.URL.Path, res.StatusCode, b)
	}
	return d, items(b, r.export), nil
}

// items counts what an answer holds: an export's lines; a JSON answer's data, when
// it is a list or a page of one; a console page's table rows (the header's apart).
func items(b []byte, export bool) int {
	if export {
		return bytes.Count(b, []byte("\n"))
	}
	var doc struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(b, &doc) == nil && len(doc.Data) > 0 {
		var list []json.RawMessage
		if json.Unmarshal(doc.Data, &list) == nil {
			return len(list)
		}
		var page struct {
			Data []json.RawMessage `json:"data"`
		}
		if json.Unmarshal(doc.Data, &page) == nil {
			return len(page.Data)
		}
		return 0
	}
	return max(bytes.Count(b, []byte("<tr"))-bytes.Count(b, []byte("<thead")), 0)
}

func (sd *side) cookieHeader() string {
	var parts []string
	for k, v := range sd.cookies {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, "; ")
}

func (sd *side) keep(res *http.Response) {
	for _, c := range res.Cookies() {
		sd.cookies[c.Name] = c.Value
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn opens a console session on sd with its operator key, as a browser does:
// the sign-in page (its form token), then the form.
func signIn(sd *side) {
	res, err := sd.client.Get(sd.Base + "/console/login")
	if err != nil {
		log.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	sd.keep(res)
	m := csrfField.FindSubmatch(b)
	if m == nil {
		log.Fatalf("%s: no form token on the console's sign-in page", sd.Name)
	}
	form := url.Values{"csrf": {string(m[1])}, "key": {sd.OperatorKey}}
	req, _ := http.NewRequest(http.MethodPost, sd.Base+"/console/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", sd.cookieHeader())
	res, err = sd.client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		log.Fatalf("%s: console sign-in answered %d: %.300s", sd.Name, res.StatusCode, b)
	}
	sd.keep(res)
}

// plans replays r once on sd (a server whose connections log every statement's
// plan with auto_explain) and prints the plans its statements logged, skipping the
// background work (the job queue's polling) that ran in the same moment.
func plans(sd *side, r read, pgLog string) {
	if _, _, err := do(sd, r); err != nil { // warm: prepared statements, caches
		fmt.Printf("plan of %s: %v\n", r.name, err)
		return
	}
	time.Sleep(200 * time.Millisecond)
	f, err := os.Open(pgLog)
	if err != nil {
		fmt.Printf("plan of %s: %v\n", r.name, err)
		return
	}
	defer f.Close()
	start, _ := f.Seek(0, io.SeekEnd)
	if _, _, err := do(sd, r); err != nil {
		fmt.Printf("plan of %s: %v\n", r.name, err)
		return
	}
	time.Sleep(500 * time.Millisecond)
	_, _ = f.Seek(start, io.SeekStart)
	b, _ := io.ReadAll(f)
	db := sd.DB[strings.LastIndex(sd.DB, "/")+1:]
	if i := strings.IndexByte(db, '?'); i >= 0 {
		db = db[:i]
	}
	fmt.Printf("plan of %s (GET %s):\n", r.name, r.path(sd.s))
	type stmt struct {
		ms   float64
		text string
	}
	var stmts []stmt
	for _, e := range entries(string(b)) {
		if !strings.Contains(e, "@"+db+" ") || !strings.Contains(e, "plan:") || strings.Contains(e, "river_") ||
			strings.Contains(e, `FROM "api_keys"`) { // the job queue and the key metrics poll, not the read
			continue
		}
		var ms float64
		if m := duration.FindStringSubmatch(e); m != nil {
			ms, _ = strconv.ParseFloat(m[1], 64)
		}
		stmts = append(stmts, stmt{ms, e[strings.Index(e, "plan:")+len("plan:"):]})
	}
	// Every statement in one line, then the plans of the three slowest.
	fmt.Printf("  %d statements:\n", len(stmts))
	for _, st := range stmts {
		q := st.text
		if i := strings.Index(q, "Query Text: "); i >= 0 {
			q = q[i+len("Query Text: "):]
		}
		if i := strings.IndexByte(q, '\n'); i >= 0 {
			q = q[:i]
		}
		fmt.Printf("    %8.3f ms  %.160s\n", st.ms, q)
	}
	slices.SortStableFunc(stmts, func(a, b stmt) int { return cmp.Compare(b.ms, a.ms) })
	for _, st := range stmts[:min(3, len(stmts))] {
		fmt.Printf("  %.3f ms:\n", st.ms)
		for _, l := range strings.Split(strings.Trim(st.text, "\n"), "\n") {
			fmt.Println("      " + strings.TrimPrefix(l, "\t"))
		}
	}
}

var duration = regexp.MustCompile(`duration: ([0-9.]+) ms`)

var entryStart = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)

// entries splits a PostgreSQL stderr log into its messages (a message's lines
// after the first carry no prefix).
func entries(s string) []string {
	idx := entryStart.FindAllStringIndex(s, -1)
	out := make([]string, 0, len(idx))
	for i, m := range idx {
		end := len(s)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out = append(out, s[m[0]:end])
	}
	return out
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
