package console_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The overview's refund work counts each kind apart, and each count is the length
// of the list it links to, for a mix made by the payment rules: two unmatched
// transfers (to transactions that already had their deposit), an overpayment's
// excess, an expired short payment, two dust transfers (a third one resolved, so
// not counted) and a failed transaction. The unmatched count is also the unmatched
// deposits page's length. The audit log names the operator and partner of each
// action and the key acted on.
func TestConsoleOverviewCountsAddUp(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { overviewCountsFlow(t, db) })
	}
}

// pay sends one transfer of amount to tx, confirmed at once.
func pay(t *testing.T, env *apitest.Env, tx client.Transaction, amount string, i int) lifecycle.Outcome {
	t.Helper()
	var out lifecycle.Outcome
	l := env.App.Lifecycle()
	_, err := l.Run(context.Background(), func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		t, o, err := l.Receive(ctx, unit, tx.Id, lifecycle.Incoming{ID: "dep_" + uuid.NewString(),
			Hash: "0x" + strings.Repeat("0", 62) + strconv.Itoa(10+i), From: "0x" + strings.Repeat("5e", 20), To: tx.DepositAddress,
			Amount: decimal.RequireFromString(amount), Confirmations: 100})
		out = o
		return t, err
	})
	require.NoError(t, err)
	return out
}

func overviewCountsFlow(t *testing.T, db testdb.Database) {
	env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
	partnerKey := env.NewPartner(t)
	pc := env.Client(t, partnerKey)
	opKey := env.NewOperator(t)
	ops := env.OperatorClient(t, opKey)
	base := env.Root + "/console"
	bg := context.Background()

	over := create(t, pc, "OVER-"+uuid.NewString()[:8], "5000.00")
	due := decimal.RequireFromString(over.CryptoAmount)
	require.Equal(t, lifecycle.Counted, pay(t, env, over, due.Add(decimal.RequireFromString("1.5")).String(), 1), "overpaid: an excess task")
	require.Equal(t, lifecycle.NotOpen, pay(t, env, over, "2", 2), "after the deposit: unmatched")
	failing := create(t, pc, "FAIL-"+uuid.NewString()[:8], "3000.00")
	confirmed(t, env, failing.Id, "0x"+strings.Repeat("f", 64))
	require.Equal(t, lifecycle.NotOpen, pay(t, env, failing, "3", 3), "after the deposit: unmatched")
	f, err := ops.FailTransactionWithResponse(bg, failing.Id, &oc.FailTransactionParams{IdempotencyKey: uuid.NewString()}, oc.FailRequest{Reason: `=HYPERLINK("http://x")`})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, f.StatusCode(), string(f.Body))
	short := create(t, pc, "SHORT-"+uuid.NewString()[:8], "4000.00")
	require.Equal(t, lifecycle.Counted, pay(t, env, short, "1.5", 4))
	_, err = env.App.Lifecycle().Run(bg, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return env.App.Lifecycle().Expire(ctx, unit, short.Id, true)
	})
	require.NoError(t, err)
	dusty := create(t, pc, "DUST-"+uuid.NewString()[:8], "2000.00")
	for i, a := range []string{"0.25", "0.5", "0.75"} {
		require.Equal(t, lifecycle.Dust, pay(t, env, dusty, a, 5+i))
	}
	dust := oc.Dust
	tasks, err := ops.ListRefundTasksWithResponse(bg, &oc.ListRefundTasksParams{Kind: &dust})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, tasks.StatusCode(), string(tasks.Body))
	require.Len(t, tasks.JSON200.Data.Data, 3)
	r, err := ops.ResolveRefundTaskWithResponse(bg, tasks.JSON200.Data.Data[0].Id, &oc.ResolveRefundTaskParams{IdempotencyKey: uuid.NewString()},
		oc.ResolveRequest{Action: oc.ResolveRequestActionCredited, Note: ptr("kept as a tip, agreed with the partner")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))

	partnerID := env.PartnerID(t, partnerKey)
	k, err := ops.CreatePartnerKeyWithResponse(bg, partnerID, &oc.CreatePartnerKeyParams{IdempotencyKey: uuid.NewString()}, oc.EmptyRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, k.StatusCode(), string(k.Body))

	ctx := webtest.Browser(t)
	signIn(t, ctx, base, opKey)
	want := map[string]int{"unmatched": 2, "excess": 1, "short": 1, "dust": 2, "failed": 1}
	var total string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#refunds", &total, chromedp.ByID)))
	require.Equal(t, "7", total, "the card's total is its rows' sum")
	webtest.Shot(t, ctx, "overview.png")
	for kind, n := range want {
		var count, href string
		require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base),
			chromedp.Text("tr.work-"+kind+" .count", &count, chromedp.ByQuery),
			chromedp.AttributeValue("tr.work-"+kind+" a", "href", &href, nil, chromedp.ByQuery)))
		require.Equal(t, strconv.Itoa(n), count, kind)
		require.Equal(t, n, rowsAt(t, ctx, env.Root+href), "%s: the count is its list's length (%s)", kind, href)
		// The list's CSV is its rows.
		rows := csvOf(t, ctx, env.Root)
		require.Len(t, rows, n+1, "%s: a header and the list's rows", kind)
		var ids []string
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('table.list tbody tr')).map(tr => tr.dataset.id)`, &ids)))
		require.Equal(t, ids, column(t, rows, "id"), kind)
	}
	require.Equal(t, want["unmatched"], rowsAt(t, ctx, base+"/deposits"), "the unmatched deposits page")
	rows := csvOf(t, ctx, env.Root)
	require.Len(t, rows, want["unmatched"]+1)
	require.Equal(t, []string{"2.000000", "3.000000"}, sorted(column(t, rows, "amount")), "exact decimal strings")

	// The audit log names the operator and the partner of each action (their ids on hover).
	var partners, operators []string
	var title string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/audit"),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#audit td.partner')).map(td => td.textContent.trim())`, &partners),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#audit td.operator')).map(td => td.textContent.trim())`, &operators),
		chromedp.AttributeValue("#audit td.partner a", "title", &title, nil, chromedp.ByQuery)))
	require.Len(t, partners, 3, "the fail, the dust task's resolution and the key")
	webtest.Shot(t, ctx, "audit.png")
	rows = csvOf(t, ctx, env.Root)
	require.Len(t, rows, 4)
	require.Equal(t, []string{"key_created", "resolve_credited", "fail"}, column(t, rows, "action"))
	require.Equal(t, "'=HYPERLINK(\"http://x\")", column(t, rows, "reference")[2], "a formula is neutralised")
	name := "Test partner " + t.Name()
	require.Equal(t, []string{name, name, name}, column(t, rows, "partner_name"))

	for i := range partners {
		require.Contains(t, partners[i], "Test partner")
		require.Contains(t, operators[i], "Test operator")
	}
	require.Equal(t, "partner "+partnerID.String(), title)
	var subject string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#audit .subject", &subject, chromedp.ByQuery)))
	require.Equal(t, k.JSON200.Data.Prefix, subject, "the key acted on, by its prefix")
}

// signIn signs the browser in with key and waits for the overview.
func signIn(t *testing.T, ctx context.Context, base, key string) {
	t.Helper()
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.SendKeys("#key", key, chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.WaitVisible("#stages", chromedp.ByID),
	))
}

// rowsAt is the number of rows of the list (the page's table.list) at u.
func rowsAt(t *testing.T, ctx context.Context, u string) int {
	t.Helper()
	var n int
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(u), chromedp.WaitReady("main", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('table.list tbody tr').length`, &n)))
	return n
}

func ptr[T any](v T) *T { return &v }

// csvOf downloads the current page's CSV (its #csv link) with the browser's
// session and parses it, checking it is RFC 4180 UTF-8 CSV.
func csvOf(t *testing.T, ctx context.Context, root string) [][]string {
	t.Helper()
	var href string
	require.NoError(t, chromedp.Run(ctx, chromedp.AttributeValue("#csv", "href", &href, nil, chromedp.ByID)))
	res, err := http.DefaultClient.Do(withCookie(t, root+href, sessionOf(t, ctx)))
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/csv; charset=utf-8", res.Header.Get("Content-Type"))
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.True(t, utf8.Valid(body))
	require.True(t, bytes.HasSuffix(body, []byte("\r\n")), "CRLF line ends")
	rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, rows, "a header row")
	return rows
}

// column is the named column of rows (after the header).
func column(t *testing.T, rows [][]string, name string) []string {
	t.Helper()
	i := slices.Index(rows[0], name)
	require.GreaterOrEqual(t, i, 0, "no column %s in %v", name, rows[0])
	out := []string{}
	for _, r := range rows[1:] {
		out = append(out, r[i])
	}
	return out
}

func sorted(s []string) []string { slices.Sort(s); return s }
