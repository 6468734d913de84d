package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

func TestMetricsDocsAndSpec(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		create(t, c, direct("MET-1", "trc20", "2000"))

		res, body := get(t, env.Root+"/metrics")
		require.Equal(t, http.StatusOK, res.StatusCode, "no partner key needed")
		require.Contains(t, body, `partnerd_transactions_created_total{network="trc20",token="usdt"}`)
		require.Contains(t, body, `partnerd_transitions_total{status="awaiting_deposit"}`)
		require.Contains(t, body, `url="/api/v1/partner/transactions"`, "HTTP metrics by route template")
		require.Contains(t, body, "partnerd_job_queue_depth")

		res, body = get(t, env.Root+"/openapi.yaml")
		require.Equal(t, http.StatusOK, res.StatusCode)
		spec, err := os.ReadFile("../../openapi/partner.yaml")
		require.NoError(t, err)
		require.Equal(t, string(spec), body, "the contract as written")

		res, body = get(t, env.Root+"/docs")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, res.Header.Get("Content-Type"), "text/html")
		require.Contains(t, body, "/openapi.yaml")
		require.Contains(t, body, "redoc.standalone.js")
	})
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	onBoth(t, map[string]string{"RATE_LIMIT_WRITES": "3/1m", "RATE_LIMIT_READS": "100/1s"}, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		c := env.Client(t, key)
		ctx := context.Background()
		q := client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")}
		for i := range 3 {
			res, err := c.CreateQuoteWithResponse(ctx, nil, q)
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.StatusCode())
			require.Equal(t, `"writes";q=3;w=60`, res.HTTPResponse.Header.Get("RateLimit-Policy"))
			require.Equal(t, `"writes";r=`+strconv.Itoa(2-i), strings.Split(res.HTTPResponse.Header.Get("RateLimit"), ";t=")[0])
		}
		res, err := c.CreateQuoteWithResponse(ctx, nil, q)
		require.NoError(t, err)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode())
		require.Equal(t, client.ErrorCodeRateLimited, res.JSON429.Error.Code)
		retry, err := strconv.Atoi(res.HTTPResponse.Header.Get("Retry-After"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, retry, 1)
		require.LessOrEqual(t, retry, 20)
		require.NotEmpty(t, res.HTTPResponse.Header.Get("RateLimit"))

		// Reads have their own budget; another key has its own too.
		list, err := c.ListTransactionsWithResponse(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, list.StatusCode())
		require.Contains(t, list.HTTPResponse.Header.Get("RateLimit-Policy"), `"reads"`)
		other, err := env.Client(t, env.NewPartner(t)).CreateQuoteWithResponse(ctx, nil, q)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, other.StatusCode())
		// Health and metrics are never limited.
		r, _ := get(t, env.Root+"/healthz")
		require.Empty(t, r.Header.Get("RateLimit"))
	})
}

func TestRateLimitsAreSharedThroughRedis(t *testing.T) {
	t.Parallel()
	db := testdb.Database{Name: "postgres", URL: testdb.PostgresSchema(t)}
	settings := map[string]string{"RATE_LIMIT_WRITES": "4/1m", "REDIS_URL": testdb.RedisURL()}
	a, b := apitest.Start(t, db, settings), apitest.Start(t, db, settings)
	key := a.NewPartner(t)
	ca, cb := a.Client(t, key), b.Client(t, key)
	ctx := context.Background()
	q := client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")}
	statuses := []int{}
	for i := range 6 {
		c := ca
		if i%2 == 1 {
			c = cb
		}
		res, err := c.CreateQuoteWithResponse(ctx, nil, q)
		require.NoError(t, err)
		statuses = append(statuses, res.StatusCode())
	}
	require.Equal(t, []int{201, 201, 201, 201, 429, 429}, statuses, "two instances draw on one budget")
}

func TestRateLimitsFailOpenWithoutRedis(t *testing.T) {
	t.Parallel()
	onBoth(t, map[string]string{"RATE_LIMIT_WRITES": "1/1m", "REDIS_URL": "redis://127.0.0.1:1/0"}, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		for range 3 {
			res, err := c.CreateTransactionWithResponse(context.Background(), params(), direct("FO-"+uuid.NewString(), "bep20", "2000"), idem())
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.StatusCode(), "Redis down: requests are served")
			require.Empty(t, res.HTTPResponse.Header.Get("RateLimit"))
		}
	})
}
