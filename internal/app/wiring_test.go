package app_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/app"
	"partnerd/internal/audit/actor"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/config"
	"partnerd/internal/kit/uow"
	"partnerd/internal/testsupport/testdb"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// stagingConfig is the staging defaults on the database at url.
func stagingConfig(t *testing.T, url string) *config.Config {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		if k == "DATABASE_URL" {
			return url
		}
		return ""
	})
	require.NoError(t, err)
	return cfg
}

// The composition root on the staging defaults: Open migrates and wires every
// service (the demo partner's key authenticates, an operator can be created, the
// handler answers its health check), Serve stops cleanly when its context ends,
// and a second Open of the same database finds it migrated and its partner there.
func TestOpenServeClose(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, err := app.Open(ctx, stagingConfig(t, db.URL), quiet())
			require.NoError(t, err)

			demo, key, err := a.EnsureDemoPartner(ctx)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(key, "sk_sandbox_"), key)
			p, err := a.Partners().Authenticate(ctx, key)
			require.NoError(t, err)
			require.Equal(t, "Demo partner", p.Name)
			require.Equal(t, demo.ID, p.ID)
			created, err := a.Actions().CreateOperator(ctx, uow.Plain[actions.NewOperator, actions.Tx](), actor.CLI, "Ada", operators.Roles)
			op, opKey := created.Operator, created.Secret
			require.NoError(t, err)
			got, err := a.Operators().Authenticate(ctx, opKey)
			require.NoError(t, err)
			require.Equal(t, op.ID, got.ID)
			_, err = a.Partners().Authenticate(ctx, opKey)
			require.Error(t, err, "an operator key is no partner key")
			require.NotNil(t, a.Lifecycle())
			require.NotNil(t, a.Keys())
			require.NotNil(t, a.Unmatched())
			rec := httptest.NewRecorder()
			a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			require.Equal(t, http.StatusOK, rec.Code)

			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			serveCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- a.Serve(serveCtx, ln) }()
			require.Eventually(t, func() bool {
				res, err := http.Get("http://" + ln.Addr().String() + "/healthz")
				if err != nil {
					return false
				}
				_ = res.Body.Close()
				return res.StatusCode == http.StatusOK
			}, 5*time.Second, 20*time.Millisecond)
			stop()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("Serve did not return after its context ended")
			}
			_, err = net.DialTimeout("tcp", ln.Addr().String(), time.Second)
			require.Error(t, err, "the listener is closed")
			// The scrape-time series read the database: the overview's counts, and
			// database_up, which turns 0 (and the counts vanish) once it is closed.
			body := scrapeBody(t, a)
			for _, want := range []string{"partnerd_database_up 1", `partnerd_stage_transactions{stage="confirming_too_long"} 0`,
				`partnerd_refund_work{kind="unmatched"} 0`, "partnerd_webhook_failing_endpoints 0", `go_sql_max_open_connections{db_name="partnerd"}`} {
				require.Contains(t, body, want)
			}
			require.NoError(t, a.Close())
			body = scrapeBody(t, a)
			require.Contains(t, body, "partnerd_database_up 0")
			require.NotContains(t, body, "partnerd_stage_transactions")

			again, err := app.Open(ctx, stagingConfig(t, db.URL), quiet())
			require.NoError(t, err)
			t.Cleanup(func() { _ = again.Close() })
			_, key2, err := again.EnsureDemoPartner(ctx)
			require.NoError(t, err)
			require.Empty(t, key2, "a database with a partner gets no second demo partner")
			_, err = again.Partners().Authenticate(ctx, key)
			require.NoError(t, err)
		})
	}
}

// scrapeBody is the app's /metrics answer.
func scrapeBody(t *testing.T, a *app.App) string {
	t.Helper()
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

// Open refuses a configuration it cannot serve, before serving anything.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name   string
		mutate func(c *config.Config)
		want   string
	}{
		{"a database under a file, where no directory can be made", func(c *config.Config) {
			file := filepath.Join(t.TempDir(), "file")
			require.NoError(t, os.WriteFile(file, nil, 0o600))
			c.DatabaseURL = "sqlite:" + filepath.Join(file, "p.db")
		}, ""},
		{"a database URL of no known kind", func(c *config.Config) { c.DatabaseURL = "mysql://db/partnerd" }, "want postgres://"},
		{"a PostgreSQL server that does not answer", func(c *config.Config) {
			c.DatabaseURL = "postgres://nobody@127.0.0.1:9/none?sslmode=disable&connect_timeout=2"
		}, ""},
		{"a deposit key that is no extended public key", func(c *config.Config) {
			for n := range c.XPubs {
				c.XPubs[n] = "xpub-not-a-key"
			}
		}, ""},
		{"a rate feed without its URL", func(c *config.Config) { c.RateSource, c.RateFeedURL = "http", "" }, "rate feed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := stagingConfig(t, testdb.SQLite(t))
			c.mutate(cfg)
			a, err := app.Open(ctx, cfg, quiet())
			require.Error(t, err)
			require.Nil(t, a)
			if c.want != "" {
				require.ErrorContains(t, err, c.want)
			}
		})
	}
}
