package httpkit_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/stretchr/testify/require"

	"partnerd/internal/httpkit"
)

// A streamed body that breaks after its first bytes ends the connection: the
// client's read fails instead of returning a short body that looks complete.
// Any other error after the answer began is left alone.
func TestStreamBrokenAbortsTheConnection(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.HTTPErrorHandler = httpkit.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	e.Use(middleware.Recover())
	answer := func(cause error) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Response().Header().Set("Content-Type", "text/csv")
			c.Response().WriteHeader(http.StatusOK)
			_, _ = c.Response().Write([]byte("a,b\r\n1,2\r\n"))
			c.Response().Flush()
			return cause
		}
	}
	e.GET("/broken", answer(fmt.Errorf("%w: %w", httpkit.ErrStreamBroken, io.ErrUnexpectedEOF)))
	e.GET("/other", answer(io.ErrUnexpectedEOF))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	res, err := http.Get(srv.URL + "/broken")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.Error(t, err, "the transfer is cut, not ended")
	require.Equal(t, "a,b\r\n1,2\r\n", string(body))
	require.NoError(t, res.Body.Close())

	res, err = http.Get(srv.URL + "/other")
	require.NoError(t, err)
	body, err = io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, "a,b\r\n1,2\r\n", string(body))
	require.NoError(t, res.Body.Close())
}
