package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/httpapi"
	"partnerd/internal/partners"
	"partnerd/internal/testsupport/apitest"
)

// The dashboard's in-process principal: a request served with it is its
// partner's (only that partner's transactions), without any key; an unknown
// partner or one of the other environment is 401; and the same request from the
// network, with no context value, is 401 whatever it carries.
func TestInProcessPrincipal(t *testing.T) {
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		a := env.PartnerID(t, key)
		b := env.PartnerID(t, env.NewPartner(t))
		live := env.PartnerID(t, env.NewPartnerIn(t, partners.Production))
		res, err := env.Client(t, key).ListTransactionsWithResponse(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode())

		serve := func(p *httpapi.Principal, id uuid.UUID) int {
			r := httptest.NewRequest(http.MethodGet, httpapi.BasePath+"/transactions/"+id.String(), nil)
			if p != nil {
				r = r.WithContext(httpapi.WithPrincipal(r.Context(), *p))
			}
			rec := httptest.NewRecorder()
			env.App.Handler().ServeHTTP(rec, r)
			return rec.Code
		}
		list := func(p *httpapi.Principal) int {
			r := httptest.NewRequest(http.MethodGet, httpapi.BasePath+"/transactions", nil)
			if p != nil {
				r = r.WithContext(httpapi.WithPrincipal(r.Context(), *p))
			}
			rec := httptest.NewRecorder()
			env.App.Handler().ServeHTTP(rec, r)
			return rec.Code
		}
		user := uuid.New()
		require.Equal(t, http.StatusOK, list(&httpapi.Principal{PartnerID: a, UserID: user}))
		require.Equal(t, http.StatusOK, list(&httpapi.Principal{PartnerID: b, UserID: user}))
		require.Equal(t, http.StatusUnauthorized, list(&httpapi.Principal{PartnerID: uuid.New(), UserID: user}), "no such partner")
		require.Equal(t, http.StatusUnauthorized, list(&httpapi.Principal{PartnerID: live, UserID: user}), "the other environment")
		require.Equal(t, http.StatusUnauthorized, list(nil), "from the network: no principal, no key")

		tx := create(t, env.Client(t, key), direct("PRINCIPAL-"+uuid.NewString()[:8], "bep20", "2000")).Id
		require.Equal(t, http.StatusOK, serve(&httpapi.Principal{PartnerID: a, UserID: user}, tx))
		require.Equal(t, http.StatusNotFound, serve(&httpapi.Principal{PartnerID: b, UserID: user}, tx), "another partner's")
	})
}
