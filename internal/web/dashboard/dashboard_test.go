package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

func create(t *testing.T, c *client.ClientWithResponses, ref, fiat string) client.Transaction {
	t.Helper()
	res, err := c.CreateTransactionWithResponse(context.Background(), &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
		client.CreateTransactionRequest{MerchantReference: ref, CryptoCurrency: "usdt", Network: "bep20", FiatAmount: &fiat})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return res.JSON201.Data
}

// paid pays tx in full through the sandbox simulator, with chain hash hash.
func paid(t *testing.T, c *client.ClientWithResponses, tx client.Transaction, hash string) {
	t.Helper()
	res, err := c.SimulateSandboxEventWithResponse(context.Background(), &client.SimulateSandboxEventParams{},
		client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: tx.Id, BlockchainHash: &hash})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// agent is a scripted client of the dashboard (no browser): its own cookies,
// redirects not followed.
type agent struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newAgent(t *testing.T, base string) *agent {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &agent{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get answers GET path with its status, body and Location.
func (a *agent) get(path string) (int, string, string) {
	a.t.Helper()
	res, err := a.c.Get(a.base + path)
	require.NoError(a.t, err)
	return readAnswer(a.t, res)
}

// post answers a form POST to path.
func (a *agent) post(path string, form url.Values) (int, string, string) {
	a.t.Helper()
	res, err := a.c.PostForm(a.base+path, form)
	require.NoError(a.t, err)
	return readAnswer(a.t, res)
}

// signIn sends the sign-in form as its page does: with the page's token.
func (a *agent) signIn(email, password string) (int, string, string) {
	a.t.Helper()
	_, page, _ := a.get("/signin")
	return a.post("/signin", url.Values{"csrf": {csrfOf(a.t, page)}, "email": {email}, "password": {password}})
}

func readAnswer(t *testing.T, res *http.Response) (int, string, string) {
	t.Helper()
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b), res.Header.Get("Location")
}

// csrfOf is the first CSRF token in page.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	require.NotNil(t, m, "a form with a csrf field")
	return m[1]
}

// The dashboard end to end in real headless Chromium against the real server:
// an operator invites a partner's first admin from the console; the admin
// accepts the link (a password the rules refuse first), enrolls a second factor
// and signs in with it; invites a finance user, who cannot open the keys (403,
// nothing changed); the search finds a transaction by reference, address and
// chain hash; a transaction shows its deposits, history and events, and the
// sandbox simulator moves it; another partner's transaction and user are 404; a
// password change ends the user's other sessions; a disabled user's session ends
// at once; the activity and the operators' audit name the admin; wrong
// passwords and codes are rate-limited per account and per address.
// flowLimit bounds the whole flow's browsing: longer than one page's tests, as
// the flow is many pages long and the machine may be busy.
const flowLimit = 4 * time.Minute

func TestDashboardInChromium(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { dashboardFlow(t, db) })
	}
}

func dashboardFlow(t *testing.T, db testdb.Database) {
	env := startSite(t, db, nil)
	keyA, keyB := env.NewPartner(t), env.NewPartner(t)
	partnerA, partnerB := env.PartnerID(t, keyA), env.PartnerID(t, keyB)
	apiA, apiB := env.Client(t, keyA), env.Client(t, keyB)
	opKey := env.NewOperator(t)
	ops := env.OperatorClient(t, opKey)
	base := env.Root + "/dashboard"
	bg := context.Background()
	users := env.App.PartnerUsers()

	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hook.Close)
	put, err := apiA.PutWebhookEndpointWithResponse(bg, &client.PutWebhookEndpointParams{}, client.WebhookEndpointRequest{Url: hook.URL, Enabled: true})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, put.StatusCode(), string(put.Body))

	var txs []client.Transaction
	for i, fiat := range []string{"5000.00", "7500.50", "10000.25"} {
		txs = append(txs, create(t, apiA, "DASH-"+string(rune('A'+i))+"-"+uuid.NewString()[:8], fiat))
	}
	hash := "0x" + strings.Repeat("ab", 32)
	paid(t, apiA, txs[1], hash)
	txB := create(t, apiB, "OTHER-"+uuid.NewString()[:8], "1000.00")

	// An operator invites the partner's first admin from the console.
	admin := webtest.BrowserWithin(t, flowLimit)
	adminEmail := "ada-" + uuid.NewString()[:8] + "@example.com"
	var link string
	require.NoError(t, chromedp.Run(admin,
		chromedp.Navigate(env.Root+"/console/login"),
		chromedp.SetValue("#key", opKey, chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.WaitVisible("header.top nav", chromedp.ByQuery), // signed in
		chromedp.Navigate(env.Root+"/console/partners/"+partnerA.String()),
		chromedp.WaitVisible("#no-users", chromedp.ByID),
		chromedp.SetValue("#invite-email", adminEmail, chromedp.ByID),
		chromedp.Click("#invite", chromedp.ByID),
		chromedp.Text("#invite-link", &link, chromedp.ByID),
	))
	require.True(t, strings.HasPrefix(link, base+"/invite/"), link)

	// The admin accepts: a short password is refused with the rule's words.
	require.NoError(t, chromedp.Run(admin,
		chromedp.Navigate(link),
		chromedp.WaitVisible("#invited", chromedp.ByID),
		chromedp.SetValue("#password", "short-one", chromedp.ByID),
		chromedp.SetValue("#confirm", "short-one", chromedp.ByID),
		chromedp.Click("#accept", chromedp.ByID),
		chromedp.WaitVisible("#error", chromedp.ByID),
	))
	require.Contains(t, text(t, admin, "#error"), "too short")
	require.NoError(t, chromedp.Run(admin,
		chromedp.SetValue("#password", testPassword, chromedp.ByID),
		chromedp.SetValue("#confirm", testPassword, chromedp.ByID),
		chromedp.Click("#accept", chromedp.ByID),
		chromedp.WaitVisible("#notice", chromedp.ByID),
	))
	require.Contains(t, text(t, admin, "#notice"), "password is set")
	require.Equal(t, http.StatusGone, open(t, admin, link), "an invitation works once")

	// Signed in (staging: no second factor yet), the admin enrolls one: the
	// page's QR code reads as the otpauth:// link of the secret shown (grouped
	// in fours), the same secret on a reload; a wrong first code shows the same
	// secret again; the right one shows ten recovery codes.
	signIn(t, admin, base, adminEmail, testPassword)
	var secret, again, reloaded string
	var qr []byte
	require.NoError(t, chromedp.Run(admin,
		chromedp.Navigate(base+"/account"),
		webtest.Follow("#enroll"),
		chromedp.Text("#secret", &secret, chromedp.ByID),
		chromedp.Screenshot("#qr svg", &qr, chromedp.ByQuery),
	))
	otpauth := text(t, admin, "#otpauth")
	require.Contains(t, otpauth, "otpauth://totp/")
	require.Regexp(t, `^([A-Z2-7]{4} )+[A-Z2-7]{1,4}$`, secret, "grouped in fours")
	require.Equal(t, otpauth, decodeQR(t, qr), "the QR code is the link")
	require.Contains(t, otpauth, "secret="+strings.ReplaceAll(secret, " ", ""), "of the secret shown")
	require.NoError(t, chromedp.Run(admin, chromedp.Reload(), chromedp.Text("#secret", &reloaded, chromedp.ByID)))
	require.Equal(t, secret, reloaded, "the same secret until enrolment ends")
	secret = strings.ReplaceAll(secret, " ", "")
	code, err := totp.GenerateCode(secret, time.Now())
	require.NoError(t, err)
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	require.NoError(t, chromedp.Run(admin,
		chromedp.SetValue("#code", wrong, chromedp.ByID),
		webtest.Follow("#confirm"),
		chromedp.WaitVisible("#error", chromedp.ByID),
		chromedp.Text("#secret", &again, chromedp.ByID),
	))
	require.Equal(t, secret, strings.ReplaceAll(again, " ", ""))
	var recovery []string
	require.NoError(t, chromedp.Run(admin,
		chromedp.SetValue("#code", code, chromedp.ByID),
		webtest.Follow("#confirm"),
		chromedp.WaitVisible("#codes", chromedp.ByID),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#codes code')).map(c => c.textContent)`, &recovery),
	))
	require.Len(t, recovery, partnerusers.RecoveryCodes)

	// Signing in now asks for a code: the next step's (this step's was used).
	require.NoError(t, chromedp.Run(admin, chromedp.Click("#continue", chromedp.ByID), chromedp.WaitVisible("#filters", chromedp.ByID),
		chromedp.Click("#signout", chromedp.ByID), chromedp.WaitVisible("#signin", chromedp.ByID)))
	next, err := totp.GenerateCode(secret, time.Now().Add(30*time.Second))
	require.NoError(t, err)
	require.NoError(t, chromedp.Run(admin,
		chromedp.SetValue("#email", adminEmail, chromedp.ByID),
		chromedp.SetValue("#password", testPassword, chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.WaitVisible("#code", chromedp.ByID),
		chromedp.SetValue("#code", next, chromedp.ByID),
		chromedp.Click("#verify", chromedp.ByID),
		chromedp.WaitVisible("#nav", chromedp.ByID),
	))
	sessionCookie(t, admin)
	var links []string
	require.NoError(t, chromedp.Run(admin, chromedp.Evaluate(`Array.from(document.querySelectorAll('#nav a')).map(a => a.textContent)`, &links)))
	require.Equal(t, []string{"Transactions", "Webhooks", "API keys", "Payouts", "Team", "Activity"}, links)

	// The admin invites a finance user; the activity names the admin.
	finEmail := "fin-" + uuid.NewString()[:8] + "@example.com"
	var finLink string
	require.NoError(t, chromedp.Run(admin,
		chromedp.Navigate(base+"/team"),
		chromedp.SetValue("#invite-email", finEmail, chromedp.ByID),
		chromedp.SetValue("#invite-role", "finance", chromedp.ByID),
		chromedp.Click("#invite", chromedp.ByID),
		chromedp.Text("#invite-link", &finLink, chromedp.ByID),
	))
	require.True(t, strings.HasPrefix(finLink, base+"/invite/"), finLink)
	require.Equal(t, http.StatusOK, open(t, admin, base+"/activity"))
	require.Contains(t, text(t, admin, "#activity"), adminEmail)
	require.Contains(t, text(t, admin, "#activity"), "partner user invited")

	// The finance user, in their own browser, accepts and signs in; the keys are
	// not theirs: the 403 page, and a key form sent anyway changes nothing.
	fin := webtest.BrowserWithin(t, flowLimit)
	require.NoError(t, chromedp.Run(fin,
		chromedp.Navigate(finLink),
		chromedp.SetValue("#password", testPassword, chromedp.ByID),
		chromedp.SetValue("#confirm", testPassword, chromedp.ByID),
		chromedp.Click("#accept", chromedp.ByID),
		chromedp.WaitVisible("#notice", chromedp.ByID),
	))
	signIn(t, fin, base, finEmail, testPassword)
	require.NoError(t, chromedp.Run(fin, chromedp.Evaluate(`Array.from(document.querySelectorAll('#nav a')).map(a => a.textContent)`, &links)))
	require.Equal(t, []string{"Transactions", "Payouts"}, links)
	require.Equal(t, http.StatusForbidden, open(t, fin, base+"/keys"))
	require.Contains(t, text(t, fin, "#forbidden"), "Not for your role")
	keysBefore := partnerKeys(t, ops, partnerA)
	finAgent := newAgent(t, base)
	finAgent.c.Jar.SetCookies(mustURL(t, base), []*http.Cookie{sessionCookie(t, fin)})
	var csrf string
	require.NoError(t, chromedp.Run(fin, chromedp.Evaluate(`document.querySelector('input[name=csrf]').value`, &csrf)))
	status, _, _ := finAgent.post("/keys", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = finAgent.post("/team", url.Values{"csrf": {csrf}, "email": {"mallory@example.com"}, "role": {"admin"}})
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, keysBefore, partnerKeys(t, ops, partnerA), "nothing changed")
	team, err := users.List(bg, partnerA)
	require.NoError(t, err)
	require.Len(t, team, 2, "no one invited")

	// The search finds a transaction by reference (any case), deposit address and chain hash.
	for _, q := range []string{strings.ToLower(txs[1].MerchantReference), txs[1].DepositAddress, hash} {
		require.Equal(t, http.StatusOK, open(t, fin, base+"/transactions?"+url.Values{"q": {q}}.Encode()), q)
		got := text(t, fin, "#transactions")
		require.Contains(t, got, txs[1].MerchantReference, q)
		require.NotContains(t, got, txs[0].MerchantReference, q)
	}
	require.Equal(t, http.StatusOK, open(t, fin, base+"/transactions?status=awaiting_deposit&network=bep20"))
	got := text(t, fin, "#transactions")
	require.Contains(t, got, txs[0].MerchantReference)
	require.NotContains(t, got, txs[1].MerchantReference, "paid: not awaiting a deposit")
	require.NotContains(t, got, txB.MerchantReference, "another partner's")

	// A transaction: its deposits, history and the events it emitted.
	require.Equal(t, http.StatusOK, open(t, fin, base+"/transactions/"+txs[1].Id.String()))
	require.Contains(t, text(t, fin, "#deposits"), hash)
	require.Contains(t, text(t, fin, "#history"), "deposit confirming")
	require.Contains(t, text(t, fin, "#events"), "deposit.detected")

	// The sandbox simulator, on the transaction's page: not finance's.
	require.Equal(t, http.StatusOK, open(t, fin, base+"/transactions/"+txs[2].Id.String()))
	var forms int
	require.NoError(t, chromedp.Run(fin, chromedp.Evaluate(`document.querySelectorAll('#simulate').length`, &forms)))
	require.Zero(t, forms)
	var status2 string
	require.NoError(t, chromedp.Run(admin,
		chromedp.Navigate(base+"/transactions/"+txs[2].Id.String()),
		chromedp.WaitVisible("#no-deposits", chromedp.ByID),
		chromedp.SetValue("#sim-event", "deposit.detected", chromedp.ByID),
		chromedp.Click("#sim-run", chromedp.ByID),
		chromedp.WaitVisible("#deposits", chromedp.ByID),
		chromedp.Text("#status", &status2, chromedp.ByID),
	))
	require.NotEqual(t, "awaiting deposit", status2)
	require.Equal(t, http.StatusOK, open(t, admin, base+"/activity"))
	require.Contains(t, text(t, admin, "#activity"), "sandbox simulated", "the admin's simulation is in the activity")

	// Another partner's transaction and user, by URL: 404, nothing changed.
	require.Equal(t, http.StatusNotFound, open(t, admin, base+"/transactions/"+txB.Id.String()))
	require.Contains(t, text(t, admin, "#notfound"), "Not found")
	require.Equal(t, http.StatusNotFound, open(t, admin, base+"/transactions/not-an-id"))
	other := newUser(t, env, partnerB, partnerusers.Finance)
	adminAgent := newAgent(t, base)
	adminAgent.c.Jar.SetCookies(mustURL(t, base), []*http.Cookie{sessionCookie(t, admin)})
	require.NoError(t, chromedp.Run(admin, chromedp.Navigate(base+"/team"),
		chromedp.Evaluate(`document.querySelector('input[name=csrf]').value`, &csrf)))
	for _, path := range []string{"/role", "/disable"} {
		status, _, _ = adminAgent.post("/team/"+other.ID.String()+path, url.Values{"csrf": {csrf}, "role": {"admin"}})
		require.Equal(t, http.StatusNotFound, status, path)
	}
	still, err := users.Get(bg, partnerB, other.ID)
	require.NoError(t, err)
	require.Equal(t, partnerusers.Finance, still.Role)
	require.Equal(t, partnerusers.Active, still.Status)

	// A password change ends the user's other sessions; this browser goes on.
	finMember := memberByEmail(t, users, partnerA, finEmail)
	second := newAgent(t, base)
	status, _, _ = second.signIn(finEmail, testPassword)
	require.Equal(t, http.StatusSeeOther, status)
	status, _, _ = second.get("/transactions")
	require.Equal(t, http.StatusOK, status)
	newPassword := testPassword + "-changed"
	require.NoError(t, chromedp.Run(fin,
		chromedp.Navigate(base+"/account"),
		chromedp.SetValue("#current", testPassword, chromedp.ByID),
		chromedp.SetValue("#new-password", newPassword, chromedp.ByID),
		chromedp.SetValue("#new-confirm", newPassword, chromedp.ByID),
		chromedp.Click("#change-password", chromedp.ByID),
		chromedp.WaitVisible("#notice", chromedp.ByID),
	))
	status, _, loc := second.get("/transactions")
	require.Equal(t, http.StatusSeeOther, status, "the other session ended")
	require.Equal(t, "/dashboard/signin", loc)
	require.Equal(t, http.StatusOK, open(t, fin, base+"/transactions"))
	require.Contains(t, text(t, fin, "h1"), "Transactions")

	// The admin disables the finance user: their session ends at once.
	require.NoError(t, chromedp.Run(admin,
		chromedp.Navigate(base+"/team"),
		chromedp.Click("#user-"+finMember.ID.String()+" .disable-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#notice", chromedp.ByID),
	))
	require.Equal(t, http.StatusOK, open(t, fin, base+"/transactions"))
	require.Contains(t, text(t, fin, "h1"), "Sign in", "the disabled user's session ended")
	require.Equal(t, http.StatusOK, open(t, admin, base+"/activity"))
	require.Contains(t, text(t, admin, "#activity"), "partner user disabled")

	// The operators' audit (the API and the console) names the admin as a partner's user.
	adminMember := memberByEmail(t, users, partnerA, adminEmail)
	au, err := ops.ListAuditWithResponse(bg, &oc.ListAuditParams{})
	require.NoError(t, err)
	require.NotNil(t, au.JSON200, string(au.Body))
	found := false
	for _, e := range au.JSON200.Data.Data {
		if e.Action == oc.AuditAction("partner_user_disabled") {
			found = true
			require.Equal(t, oc.AuditActor("partner_user"), e.Actor)
			require.Equal(t, adminEmail, e.OperatorName)
			require.Equal(t, adminMember.ID, *e.PartnerUserId)
			require.Equal(t, partnerA, *e.PartnerId)
		}
	}
	require.True(t, found, "the disable is audited")
	require.Equal(t, http.StatusOK, open(t, admin, env.Root+"/console/audit"), "the operator's console session, in the same browser")
	require.Contains(t, text(t, admin, "#audit .partner-user"), adminEmail)

	// Wrong codes are rate-limited per account: after five, even a right code is refused.
	coder := newAgent(t, base)
	status, _, loc = coder.signIn(adminEmail, testPassword)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/dashboard/signin/code", loc)
	_, page, _ := coder.get("/signin/code")
	pending := csrfOf(t, page)
	for range 4 { // the wrong first code at enrolment was the account's first failure
		status, _, _ = coder.post("/signin/code", url.Values{"csrf": {pending}, "code": {"zzzzz-zzzzz"}})
		require.Equal(t, http.StatusUnauthorized, status)
	}
	status, page, _ = coder.post("/signin/code", url.Values{"csrf": {pending}, "code": {recovery[0]}})
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Contains(t, page, "Too many")

	// Wrong passwords too, per account: another account from the same address still signs in.
	dev := newUser(t, env, partnerA, partnerusers.Developer)
	guesser := newAgent(t, base)
	for range 5 {
		status, _, _ = guesser.signIn(dev.Email, "not-the-password")
		require.Equal(t, http.StatusUnauthorized, status)
	}
	status, _, _ = guesser.signIn(dev.Email, testPassword)
	require.Equal(t, http.StatusTooManyRequests, status)
	spare := newUser(t, env, partnerA, partnerusers.Developer)
	status, _, _ = newAgent(t, base).signIn(spare.Email, testPassword)
	require.Equal(t, http.StatusSeeOther, status)

	// And per address: many wrong guesses at many accounts block the address.
	blocked := false
	for range 25 {
		status, _, _ = guesser.signIn(uuid.NewString()[:8]+"@example.com", "not-the-password")
		if status == http.StatusTooManyRequests {
			blocked = true
			break
		}
		require.Equal(t, http.StatusUnauthorized, status)
	}
	require.True(t, blocked)
	status, _, _ = newAgent(t, base).signIn(spare.Email, testPassword)
	require.Equal(t, http.StatusTooManyRequests, status)
}

func partnerKeys(t *testing.T, ops *oc.ClientWithResponses, partner uuid.UUID) []string {
	t.Helper()
	res, err := ops.ListPartnerKeysWithResponse(context.Background(), partner)
	require.NoError(t, err)
	require.NotNil(t, res.JSON200, string(res.Body))
	var out []string
	for _, k := range res.JSON200.Data {
		out = append(out, k.Id.String()+" "+string(k.Status))
	}
	return out
}

func memberByEmail(t *testing.T, users *partnerusers.Service, partner uuid.UUID, email string) *partnerusers.User {
	t.Helper()
	list, err := users.List(context.Background(), partner)
	require.NoError(t, err)
	for _, u := range list {
		if u.Email == email {
			return u
		}
	}
	t.Fatalf("no user %s", email)
	return nil
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
