package console_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func create(t *testing.T, c *client.ClientWithResponses, ref, fiat string) client.Transaction {
	t.Helper()
	res, err := c.CreateTransactionWithResponse(context.Background(), &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
		client.CreateTransactionRequest{MerchantReference: ref, CryptoCurrency: "usdt", Network: "bep20", FiatAmount: &fiat})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return res.JSON201.Data
}

func confirmed(t *testing.T, env *apitest.Env, id uuid.UUID, hash string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return env.App.Lifecycle().DetectDeposit(ctx, unit, id, lifecycle.DepositInput{ID: "dep_" + uuid.NewString(), Hash: hash, Confirmations: 1})
	})
	require.NoError(t, err)
	_, err = env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return env.App.Lifecycle().Confirm(ctx, unit, id, 15)
	})
	require.NoError(t, err)
}

// The console end to end in real headless Chromium against the real server: sign
// in, the overview's queue, search, a transaction through fill, settle and payout
// with confirmations (only the legal actions offered at each step), a batch payout of three, and a
// partner key rolled and revoked; pages without a session and forms without the
// CSRF token are refused.
func TestConsoleInChromium(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { consoleFlow(t, db) })
	}
}

func consoleFlow(t *testing.T, db testdb.Database) {
	env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
	partnerKey := env.NewPartner(t)
	pc := env.Client(t, partnerKey)
	opKey := env.NewOperator(t)
	base := env.Root + "/console"

	// Without a session: pages send to sign-in, posts are refused.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := noRedirect.Get(base)
	require.NoError(t, err)
	_ = r.Body.Close()
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/console/login", r.Header.Get("Location"))
	require.Contains(t, r.Header.Get("Content-Security-Policy"), "default-src 'none'")

	hashes := []string{}
	var txs []client.Transaction
	for i, fiat := range []string{"5000.00", "7500.50", "10000.25", "2500.00"} {
		tx := create(t, pc, "CONSOLE-"+uuid.NewString()[:8], fiat)
		h := "0x" + strings.Repeat(string("abcd"[i]), 64)
		confirmed(t, env, tx.Id, h)
		hashes = append(hashes, h)
		txs = append(txs, tx)
	}

	ctx := webtest.Browser(t)
	var text string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.SendKeys("#key", "sk_op_wrong", chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.Text(".problem", &text, chromedp.ByQuery),
	))
	require.Contains(t, text, "not recognised")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SetValue("#key", opKey, chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.WaitVisible("#stages", chromedp.ByID),
		chromedp.Text("tr.stage-awaiting_fill .count", &text, chromedp.ByQuery),
	))
	require.Equal(t, "4", text)
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("tr.stage-awaiting_fill .fiat", &text, chromedp.ByQuery)))
	require.Equal(t, "25,000.75 NGN", text, "amounts grouped in thousands, exact")

	// Search by reference (other case), address and hash.
	for _, q := range []string{strings.ToLower(txs[1].MerchantReference), txs[1].DepositAddress, hashes[1]} {
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Navigate(base+"/transactions?"+url.Values{"q": {q}}.Encode()),
			chromedp.Text("#results", &text, chromedp.ByID),
		))
		require.Contains(t, text, txs[1].MerchantReference, q)
		require.NotContains(t, text, txs[0].MerchantReference, q)
		require.Contains(t, text, "Test partner", "lists name the partner")
	}

	// One transaction through fill, settle and payout, each confirmed.
	tx := txs[0]
	step := func(button string, fill map[string]string) {
		t.Helper()
		acts := []chromedp.Action{chromedp.Navigate(base + "/transactions/" + tx.Id.String())}
		for sel, v := range fill {
			acts = append(acts, chromedp.SendKeys(sel, v, chromedp.ByID))
		}
		acts = append(acts, chromedp.Click(button, chromedp.ByID), chromedp.WaitVisible("#confirm", chromedp.ByID),
			webtest.Follow("#confirm"), chromedp.WaitVisible("#status", chromedp.ByID))
		require.NoError(t, chromedp.Run(ctx, acts...))
	}
	// offered lists the action forms the page shows: only the legal ones.
	offered := func() []string {
		t.Helper()
		var ids []string
		require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/transactions/"+tx.Id.String()),
			chromedp.WaitVisible("#actions", chromedp.ByID),
			chromedp.Evaluate(`Array.from(document.querySelectorAll('#actions form')).map(f => f.id)`, &ids)))
		return ids
	}
	require.Equal(t, []string{"fill-form", "fail-form"}, offered(), "awaiting fill: fill or fail")
	// The confirmation says what it does, to which transaction and how much; Cancel
	// goes back to the transaction, nothing recorded.
	var cancel string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys("#fill-rate", "1549.10", chromedp.ByID), chromedp.SendKeys("#fill-amount", "5000.00", chromedp.ByID),
		chromedp.SendKeys("#fill-ref", "LP-CANCELLED", chromedp.ByID), chromedp.Click("#fill", chromedp.ByID),
		chromedp.WaitVisible("#confirm", chromedp.ByID),
		chromedp.Text("h1", &text, chromedp.ByQuery),
	))
	require.Contains(t, text, "Record the executed sale")
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#subject", &text, chromedp.ByID)))
	require.Contains(t, text, tx.MerchantReference)
	require.Contains(t, text, tx.CryptoAmount+" USDT")
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("table.grid", &text, chromedp.ByQuery),
		chromedp.AttributeValue("#cancel", "href", &cancel, nil, chromedp.ByID)))
	require.Contains(t, text, "NGN amount")
	require.NotContains(t, text, "fiat_amount", "labels, not field names")
	require.Equal(t, "/console/transactions/"+tx.Id.String(), cancel)
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#cancel", chromedp.ByID), chromedp.WaitVisible("#actions", chromedp.ByID),
		chromedp.Text("#status", &text, chromedp.ByID)))
	require.Equal(t, "deposit confirming", text, "cancelled: nothing recorded")
	step("#fill", map[string]string{"#fill-rate": "1549.10", "#fill-amount": "5000.00", "#fill-ref": "LP-1"})
	require.Equal(t, []string{"settle-form", "fail-form"}, offered(), "filled: settle or fail")
	step("#settle", map[string]string{"#settle-ref": "SETTLE-1"})
	step("#payout", map[string]string{"#payout-ref": "NIP-1"})
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#status", &text, chromedp.ByID)))
	require.Equal(t, "completed", text)
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#history", &text, chromedp.ByID)))
	require.Contains(t, text, "paid out", "reasons in words")
	require.NotContains(t, text, "payout:settled")
	require.Contains(t, text, "NIP-1")
	require.Contains(t, text, "Test operator", "history names the operator, not an id")
	webtest.Shot(t, ctx, "transaction.png")

	// Completed and paid out: nothing is offered.
	require.Empty(t, offered(), "completed and paid out: no action")
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#no-actions", &text, chromedp.ByID)))
	require.Contains(t, text, "No action applies")

	// Three more completed through the API, then paid out in one batch from the console.
	ops := env.OperatorClient(t, opKey)
	for _, x := range txs[1:] {
		completeThroughAPI(t, ops, x)
	}
	partnerID := env.PartnerID(t, partnerKey)
	// The page starts from a partner: nothing listed until one is chosen.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/payouts/new"),
		chromedp.WaitVisible("#choose-first", chromedp.ByID),
	))
	var forms int
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('#batch').length`, &forms)))
	require.Zero(t, forms, "no transaction listed before a partner is chosen")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SetValue("#partner", partnerID.String(), chromedp.ByID),
		webtest.Follow("#choose"),
		chromedp.WaitVisible("#batch", chromedp.ByID),
	))
	tick := func() {
		t.Helper()
		for _, x := range txs[1:] {
			require.NoError(t, chromedp.Run(ctx, chromedp.Click(`input[value="`+x.Id.String()+`"]`, chromedp.ByQuery)))
		}
	}
	// A typed total that is not the ticked rows' sum is refused before the
	// confirmation, on the form itself with what was typed kept; nothing recorded.
	tick()
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys("#batch-ref", "NIP-BATCH-1", chromedp.ByID),
		chromedp.SendKeys("#batch-amount", "20,000.00", chromedp.ByID),
		webtest.Follow("#batch-submit"),
		chromedp.Text("#error", &text, chromedp.ByID),
	))
	require.Contains(t, text, "(20,000.00 NGN) is not the sum of the 3 transactions ticked (20,000.75 NGN)")
	var kept int
	var ref string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('input.tick:checked').length`, &kept),
		chromedp.Value("#batch-ref", &ref, chromedp.ByID)))
	require.Equal(t, 3, kept, "the ticks are kept")
	require.Equal(t, "NIP-BATCH-1", ref, "the reference is kept")
	pays, err := ops.ListPayoutsWithResponse(context.Background(), &oc.ListPayoutsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pays.StatusCode(), string(pays.Body))
	require.Len(t, pays.JSON200.Data.Data, 1, "nothing recorded but the single payout, a payout of one")
	require.Equal(t, "NIP-1", pays.JSON200.Data.Data[0].Reference)
	// The total typed as the page shows it, with its currency: confirmed with
	// the partner's name, the references and grouped amounts, and recorded.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Clear("#batch-amount", chromedp.ByID),
		chromedp.SendKeys("#batch-amount", "20,000.75 NGN", chromedp.ByID),
		webtest.Follow("#batch-submit"),
		chromedp.WaitVisible("#confirm", chromedp.ByID),
		chromedp.Text("main", &text, chromedp.ByQuery),
	))
	require.Contains(t, text, "pay out 3 transactions, 20,000.75 NGN in all")
	require.Contains(t, text, "Test partner")
	require.Contains(t, text, txs[1].MerchantReference)
	require.Contains(t, text, "20,000.75 NGN")
	require.NotContains(t, text, txs[1].Id.String(), "transactions named by their references, not their ids")
	require.NoError(t, chromedp.Run(ctx,
		webtest.Follow("#confirm"),
		chromedp.Text("#notice", &text, chromedp.ByID),
	))
	require.Contains(t, text, "Payout recorded: 3 transactions, NGN 20,000.75, reference NIP-BATCH-1")
	// The recorded payouts, each with its partner, total and transactions.
	require.NoError(t, chromedp.Run(ctx,
		webtest.Follow("#recorded"),
		chromedp.Text("#payouts", &text, chromedp.ByID),
	))
	require.Contains(t, text, "NIP-BATCH-1")
	require.Contains(t, text, "Test partner")
	require.Contains(t, text, "20,000.75")
	var links int
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('#payouts tbody tr:first-child a.tx').length`, &links)))
	require.Equal(t, 3, links, "the batch's three transactions, linked")

	// Partners: roll the partner's key (the old one works through the overlap),
	// then revoke the new one.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/partners/"+partnerID.String()),
		chromedp.WaitVisible("#keys", chromedp.ByID),
		chromedp.WaitReady("body", chromedp.ByQuery),
		chromedp.WaitVisible("button.roll", chromedp.ByQuery),
		chromedp.Click("button.roll", chromedp.ByQuery),
		chromedp.Text("#secret", &text, chromedp.ByID),
	))
	newKey := strings.TrimSpace(text)
	require.True(t, strings.HasPrefix(newKey, "sk_sandbox_"))
	require.Equal(t, http.StatusOK, listStatus(t, env, partnerKey), "the old key during the overlap")
	require.Equal(t, http.StatusOK, listStatus(t, env, newKey))
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/partners")))
	webtest.Shot(t, ctx, "partners.png")
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/partners/"+partnerID.String())), "navigate")
	require.NoError(t, chromedp.Run(ctx, chromedp.WaitVisible("#keys", chromedp.ByID)), "keys")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click("tr.key-active button.revoke", chromedp.ByQuery),
		chromedp.Text("#notice", &text, chromedp.ByID),
	))
	require.Contains(t, text, "revoked")
	require.Equal(t, http.StatusUnauthorized, listStatus(t, env, newKey))

	// A form posted without its CSRF token, with the session cookie, is refused.
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.cookie`, &text)))
	require.Empty(t, text, "the session cookie is HttpOnly")
	sessionCookie := sessionOf(t, ctx)
	req, err := http.NewRequest(http.MethodPost, base+"/transactions/"+txs[0].Id.String()+"/action",
		strings.NewReader(url.Values{"action": {"fail"}, "reason": {"x"}, "confirmed": {"yes"}, "idempotency_key": {uuid.NewString()}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(sessionCookie)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	// Sign out (the form's own token) ends the session.
	var csrf string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base), chromedp.Value(`input[name="csrf"]`, &csrf, chromedp.ByQuery)))
	out, err := http.NewRequest(http.MethodPost, base+"/logout", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	require.NoError(t, err)
	out.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	out.AddCookie(sessionCookie)
	r, err = noRedirect.Do(out)
	require.NoError(t, err)
	_ = r.Body.Close()
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	r, err = noRedirect.Do(withCookie(t, base, sessionCookie))
	require.NoError(t, err)
	_ = r.Body.Close()
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "the old session is gone")
	require.Equal(t, "/console/login", r.Header.Get("Location"))
}
