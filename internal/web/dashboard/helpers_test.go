package dashboard_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// site is a running service with one partner and one of its users signed in to
// the dashboard in a real browser.
type site struct {
	Env *apitest.Env
	// Base is the dashboard's address, http://127.0.0.1:PORT/dashboard.
	Base string
	// Key is the partner's API key; API the partner API as that partner.
	Key       string
	PartnerID uuid.UUID
	API       *client.ClientWithResponses
	// Browser is headless Chromium, signed in as User (Email, Password).
	Browser         context.Context
	User            *partnerusers.User
	Email, Password string
}

// testPassword is a password the rules accept.
const testPassword = "plum-orbit-lantern-42"

// startSite runs the service on db (staging, where the second factor is
// optional, unless settings say otherwise).
func startSite(t *testing.T, db testdb.Database, settings map[string]string) *apitest.Env {
	t.Helper()
	if settings == nil {
		settings = map[string]string{}
	}
	return apitest.Start(t, db, settings)
}

// newUser makes an active user of partnerID with role (invited by the command
// line, accepted with testPassword) and returns them.
func newUser(t *testing.T, env *apitest.Env, partnerID uuid.UUID, role partnerusers.Role) *partnerusers.User {
	t.Helper()
	ctx := context.Background()
	email := string(role) + "-" + uuid.NewString()[:8] + "@example.com"
	inv, err := env.App.PartnerUsers().Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), partnerID, email, role, actor.CLI)
	require.NoError(t, err)
	u, err := env.App.PartnerUsers().Accept(ctx, inv.Token, testPassword)
	require.NoError(t, err)
	return u
}

// signedIn starts the service on db with a partner and a user of role, signed in
// in a fresh browser (staging: no second factor asked).
func signedIn(t *testing.T, db testdb.Database, role partnerusers.Role) *site {
	t.Helper()
	env := startSite(t, db, nil)
	key := env.NewPartner(t)
	s := &site{Env: env, Base: env.Root + "/dashboard", Key: key, PartnerID: env.PartnerID(t, key), API: env.Client(t, key)}
	s.User = newUser(t, env, s.PartnerID, role)
	s.Email, s.Password = s.User.Email, testPassword
	s.Browser = webtest.Browser(t)
	signIn(t, s.Browser, s.Base, s.Email, s.Password)
	return s
}

// signIn signs in with email and password on the sign-in page and waits for the
// dashboard's navigation.
func signIn(t *testing.T, ctx context.Context, base, email, password string) {
	t.Helper()
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/signin"),
		chromedp.SetValue("#email", email, chromedp.ByID),
		chromedp.SetValue("#password", password, chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.WaitVisible("#nav", chromedp.ByID),
	))
}

// open navigates to base+path and returns the status of the page's answer.
func open(t *testing.T, ctx context.Context, url string) int {
	t.Helper()
	res, err := chromedp.RunResponse(ctx, chromedp.Navigate(url))
	require.NoError(t, err)
	require.NotNil(t, res)
	return int(res.Status)
}

// text is the text of the element sel (by query).
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text(sel, &s, chromedp.ByQuery)))
	return s
}

// sessionCookie returns the browser's dashboard_session cookie, checking its attributes.
func sessionCookie(t *testing.T, ctx context.Context) *http.Cookie {
	t.Helper()
	return webtest.SessionCookie(t, ctx, "dashboard_session", "/dashboard")
}

// secretField finds the enrolment page's secret.
var secretField = regexp.MustCompile(`id="secret">([A-Z2-7 ]+)<`)

// recoveryField finds the recovery codes on the page that shows them.
var recoveryField = regexp.MustCompile(`<li><code>([a-z2-9]{5}-[a-z2-9]{5})</code></li>`)

// decodeQR reads the QR code in the PNG image img.
func decodeQR(t *testing.T, img []byte) string {
	t.Helper()
	im, err := png.Decode(bytes.NewReader(img))
	require.NoError(t, err)
	bmp, err := gozxing.NewBinaryBitmapFromImage(im)
	require.NoError(t, err)
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	require.NoError(t, err, "a QR code that reads")
	return res.GetText()
}
