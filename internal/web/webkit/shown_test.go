package webkit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/store"
	"partnerd/internal/web/webkit"
)

// A value sealed for the page an action redirects to opens once, on that page,
// in that session: a reload, another page or another session opens nothing,
// on both databases.
func TestShownOnce(t *testing.T) {
	eachDatabase(t, func(t *testing.T, st *store.Store) {
		site, err := webkit.NewSite(webkit.SiteConfig[struct{}]{Base: "/site", Name: "site", SignIn: "/site/signin",
			Pages: fstest.MapFS{"header.html": {Data: []byte(`{{define "header"}}{{end}}`)}}, Idle: time.Hour, Absolute: time.Hour, State: st})
		require.NoError(t, err)
		mine := &webkit.Session[struct{}]{ID: webkit.RandomToken()}
		theirs := &webkit.Session[struct{}]{ID: webkit.RandomToken()}
		sealed := site.Seal(mine, "/site/keys", map[string]string{"Secret": "sk_once"})
		require.NotContains(t, sealed, "sk_once")
		at := func(path string) *http.Request {
			return httptest.NewRequest(http.MethodGet, path+"?shown="+sealed, nil)
		}

		require.Nil(t, site.Open(t.Context(), at("/site/keys"), theirs), "another session")
		require.Nil(t, site.Open(t.Context(), at("/site/team"), mine), "another page")
		require.Equal(t, map[string]string{"Secret": "sk_once"}, site.Open(t.Context(), at("/site/keys"), mine))
		require.Nil(t, site.Open(t.Context(), at("/site/keys"), mine), "a reload shows nothing")
		require.Nil(t, site.Open(t.Context(), httptest.NewRequest(http.MethodGet, "/site/keys?shown=x", nil), mine))
	})
}
