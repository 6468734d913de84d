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
	"testing"
	"time"

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
