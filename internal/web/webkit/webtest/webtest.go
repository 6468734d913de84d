// Package webtest drives the service's sites as a person does, in real headless
// Chromium (Debian's chromium package) through chromedp: the console's tests and
// the dashboard's share it.
package webtest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Browser starts headless Chromium with a fresh profile and a 1280×900 window,
// stopped when the test ends; the context bounds the test's browsing to 90 s.
// A machine without chromium fails the test, naming the package (make test
// installs it).
func Browser(t *testing.T) context.Context {
	t.Helper()
	return BrowserWithin(t, 90*time.Second)
}

// BrowserWithin is Browser bounding the test's browsing to limit: a flow of many
// pages (the dashboard's, end to end) needs more than one page's 90 s.
func BrowserWithin(t *testing.T, limit time.Duration) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	require.NoError(t, err, "the browser tests need Debian's chromium package (make test installs it)")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile(t)), chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, limit)
	t.Cleanup(cancel3)
	return ctx
}

// profile returns a fresh Chromium profile directory, removed after the browser
// (registered before it, so cleaned up after it): Chromium's helper processes may
// still be writing there for a moment after the browser is told to stop, which
// t.TempDir's cleanup would report as a failure.
func profile(t *testing.T) string {
	dir, err := os.MkdirTemp("", "site-chromium-")
	require.NoError(t, err)
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dir
}

// Shot takes a full-page PNG screenshot (quality 100 is PNG in chromedp) and,
// with UPDATE_SCREENSHOTS=1, replaces testdata/name of the package under test
// with it (the README shows those files); it is written to a temporary file and
// renamed, as both databases' runs take the same shots.
func Shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	require.NoError(t, chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)))
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG screenshot")
	if os.Getenv("UPDATE_SCREENSHOTS") == "" {
		return
	}
	f, err := os.CreateTemp("testdata", name+".*")
	require.NoError(t, err)
	_, err = f.Write(png)
	require.NoError(t, errors.Join(err, f.Close()))
	require.NoError(t, os.Rename(f.Name(), filepath.Join("testdata", name)))
}

// OtherOrigin serves page (HTML) at the returned address, on a port of its own:
// another origin of the same host, the same site for the browser's SameSite
// rules, as a hostile page on another service of the machine would be. The
// CSRF tests post the sites' forms from there.
func OtherOrigin(t *testing.T, page string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// SessionCookie returns the browser's cookie name, checking the attributes
// every site's session cookie has: HttpOnly, SameSite=Strict, the site's path.
func SessionCookie(t *testing.T, ctx context.Context, name, path string) *http.Cookie {
	t.Helper()
	var cookies []*network.Cookie
	require.NoError(t, chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().Do(ctx)
		return err
	})))
	for _, c := range cookies {
		if c.Name == name {
			require.True(t, c.HTTPOnly)
			require.Equal(t, network.CookieSameSiteStrict, c.SameSite)
			require.Equal(t, path, c.Path)
			return &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	t.Fatalf("no %s cookie", name)
	return nil
}

// offScreen lists the table cells and amounts of the page's main part that lie
// (even in part) outside the viewport, as "class: text": what a reader on that
// screen cannot see without scrolling sideways, inside a box or not.
const offScreen = `(() => {
  const w = document.documentElement.clientWidth, out = [];
  document.querySelectorAll('main table td, main table th, main .num').forEach(e => {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && (r.right > w + 0.5 || r.left < -0.5)) {
      out.push((e.className || e.tagName) + ': ' + e.textContent.trim().slice(0, 40));
    }
  });
  return out;
})()`

// RequireOnScreen opens url at a width×844 viewport and fails when a table cell
// or an amount of the page lies outside the screen, or the page scrolls
// sideways.
func RequireOnScreen(t *testing.T, ctx context.Context, width int64, url string) {
	t.Helper()
	var widths []int
	var outside []string
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(width, 844), chromedp.Navigate(url),
		chromedp.WaitReady("main", chromedp.ByQuery),
		chromedp.Evaluate(`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`, &widths),
		chromedp.Evaluate(offScreen, &outside)))
	require.Equal(t, int(width), widths[1], "the viewport is %d px", width)
	require.LessOrEqual(t, widths[0], widths[1], "%d px, %s: the page scrolls sideways", width, url)
	require.Empty(t, outside, "%d px, %s: cells or amounts off-screen", width, url)
}

// Methods runs actions and returns the method of every page (document)
// request the browser made meanwhile: a reload of an action's answer that
// shows POST sends the action again.
func Methods(t *testing.T, ctx context.Context, actions ...chromedp.Action) []string {
	t.Helper()
	var mu sync.Mutex
	var methods []string
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chromedp.ListenTarget(lctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Type == network.ResourceTypeDocument {
			mu.Lock()
			methods = append(methods, e.Request.Method)
			mu.Unlock()
		}
	})
	require.NoError(t, chromedp.Run(ctx, append([]chromedp.Action{network.Enable()}, actions...)...))
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), methods...)
}

// RequirePostRedirectGet runs actions (a form's submission and the waits after
// it) and requires the browser to have sent the form once and then read its
// answer by a GET: post/redirect/get.
func RequirePostRedirectGet(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	require.Equal(t, []string{http.MethodPost, http.MethodGet}, Methods(t, ctx, actions...), "the form, then its answer by a redirect")
}

// RequireReloadReads reloads the page, runs actions after it, and requires the
// reload to have been one GET: an action's answer reloaded sends nothing again.
func RequireReloadReads(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	require.Equal(t, []string{http.MethodGet}, Methods(t, ctx, append([]chromedp.Action{chromedp.Reload()}, actions...)...),
		"a reload sends nothing again")
}

// RequireShownOnce clicks submit, a form whose answer shows a secret once
// (#secret: a new key), and requires post/redirect/get; then a reload reads the
// page again without the secret, and rows (a selector) number want: nothing
// made twice. It returns the secret.
func RequireShownOnce(t *testing.T, ctx context.Context, submit string, rows string, want int) string {
	t.Helper()
	var secret string
	RequirePostRedirectGet(t, ctx, chromedp.Click(submit, chromedp.ByQuery), chromedp.WaitVisible("#secret", chromedp.ByID),
		chromedp.Text("#secret", &secret, chromedp.ByID))
	var secrets, n int
	RequireReloadReads(t, ctx, chromedp.WaitReady("main", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#secret').length`, &secrets),
		chromedp.Evaluate(`document.querySelectorAll(`+strconv.Quote(rows)+`).length`, &n))
	require.Zero(t, secrets, "the secret is shown once")
	require.Equal(t, want, n, "nothing made twice")
	return secret
}

// Follow clicks the element sel names and waits until the page the click leads
// to (through any redirect) has loaded: an action queried right after a plain
// click can land on a node of the document being left, which Chromium then
// answers "No node with given id found".
func Follow(sel string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := chromedp.RunResponse(ctx, chromedp.Click(sel, chromedp.ByQuery))
		return err
	})
}
