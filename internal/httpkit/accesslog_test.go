package httpkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// A request's access log line is INFO when it went well (2xx, 3xx), WARN when it
// was refused (4xx) and ERROR when the service failed (5xx).
func TestAccessLogLevelFollowsStatus(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(log, nil)
	e.Use(RequestID(), AccessLog(log))
	e.GET("/status/:code", func(c echo.Context) error {
		code, err := strconv.Atoi(c.Param("code"))
		if err != nil {
			return err
		}
		return c.NoContent(code)
	})
	want := map[int]string{200: "INFO", 204: "INFO", 302: "INFO", 304: "INFO", 401: "WARN", 404: "WARN", 429: "WARN", 500: "ERROR", 503: "ERROR"}
	for code := range want {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status/"+strconv.Itoa(code), nil))
		require.Equal(t, code, rec.Code)
	}
	got := map[int]string{}
	sc := bufio.NewScanner(&logs)
	for sc.Scan() {
		var line struct {
			Msg    string `json:"msg"`
			Level  string `json:"level"`
			Status int    `json:"status"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line.Msg == "request" {
			_, dup := got[line.Status]
			require.False(t, dup, "one access log line per request: %d", line.Status)
			got[line.Status] = line.Level
		}
	}
	require.Equal(t, want, got)
}
