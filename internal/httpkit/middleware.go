package httpkit

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"partnerd/internal/kit/apperr"
)

// MaxBodyBytes caps request bodies (413 payload_too_large above it).
const MaxBodyBytes = 64 << 10

// RequestID gives every request a fresh id, sent back as X-Request-Id and quoted in
// error bodies and logs. An id sent by the client is not trusted (it could collide
// or carry junk into our logs).
func RequestID() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			id := hex.EncodeToString(b)
			c.Request().Header.Set(echo.HeaderXRequestID, id)
			c.Response().Header().Set(echo.HeaderXRequestID, id)
			return next(c)
		}
	}
}

// RequireJSON answers 415 unsupported_media_type for a request body that is not
// application/json. Bodiless requests (GET, or a POST with no content) pass; the
// validator decides whether a body was required.
func RequireJSON() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if BodyIgnored(c) {
				return next(c)
			}
			r := c.Request()
			hasBody := r.ContentLength > 0
			if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
				// Length unknown (chunked): peek, so an empty body counts as none.
				br := bufio.NewReader(r.Body)
				_, err := br.Peek(1)
				hasBody = err != io.EOF
				r.Body = readCloser{Reader: br, Closer: r.Body}
			}
			ct := r.Header.Get(echo.HeaderContentType)
			if !hasBody && ct == "" {
				return next(c)
			}
			mt, _, err := mime.ParseMediaType(ct)
			if hasBody && (err != nil || mt != echo.MIMEApplicationJSON) {
				return apperr.New(apperr.UnsupportedMediaType, "Request bodies must be application/json.")
			}
			return next(c)
		}
	}
}

// readCloser reads through a buffered reader and closes the original body.
type readCloser struct {
	io.Reader
	io.Closer
}

// RequestDeadline bounds the work of one partner request, database included: a
// stuck query is cancelled instead of holding a connection forever.
const RequestDeadline = 20 * time.Second

func deadline(d time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx, cancel := context.WithTimeout(c.Request().Context(), d)
			defer cancel()
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}

// RefuseOptions answers OPTIONS with 405 in the error body, with the path's
// methods in Allow. The API serves no browsers (no CORS), and Echo's own answer,
// a bodiless 204, is not in the contract.
func RefuseOptions(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method == http.MethodOptions {
			return echo.ErrMethodNotAllowed
		}
		return next(c)
	}
}

// HeadAsGet serves HEAD wherever GET is served (RFC 9110 §9.3.2): the request is
// routed, authenticated, limited and answered as a GET, its body dropped. It is
// a Pre middleware: Echo routes on the request's own method, so the method is
// changed in place and put back once the handler has returned, before net/http
// finishes the answer (which then sends no body, as for any HEAD).
func HeadAsGet(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodHead {
			return next(c)
		}
		r.Method = http.MethodGet
		res := c.Response()
		res.Writer = bodyless{res.Writer}
		defer func() { r.Method = http.MethodHead }()
		return next(c)
	}
}

// bodyless passes the status and headers through and drops the body. Flush does
// nothing: the answer goes out once the handler has returned, as a HEAD's.
type bodyless struct{ http.ResponseWriter }

func (b bodyless) Write(p []byte) (int, error) { return len(p), nil }

func (b bodyless) Flush() {}

// allowOf is the Allow header of a 405 answer: the methods the router found on
// the path, OPTIONS left out (refused everywhere) and HEAD added beside GET
// (HeadAsGet).
func allowOf(c echo.Context) string {
	found, _ := c.Get(echo.ContextKeyHeaderAllow).(string)
	var out []string
	for _, m := range strings.Split(found, ",") {
		m = strings.TrimSpace(m)
		if m == "" || m == http.MethodOptions || m == http.MethodHead {
			continue
		}
		out = append(out, m)
		if m == http.MethodGet {
			out = append(out, http.MethodHead)
		}
	}
	return strings.Join(out, ", ")
}

// BodyIgnored reports whether the request's body, if any, is never read: GET and
// HEAD operations take none, so neither its size nor its type can fail them.
func BodyIgnored(c echo.Context) bool {
	m := c.Request().Method
	return m == http.MethodGet || m == http.MethodHead
}

func wrapValidation(me error) *echo.HTTPError {
	return &echo.HTTPError{Code: http.StatusBadRequest, Message: "invalid request", Internal: me}
}

// logIdentityKey holds, in the echo context, the attribute naming who made the
// request, for the access log (see SetLogIdentity).
const logIdentityKey = "partnerd.log_identity"

// SetLogIdentity names who made the request (e.g. "operator_id", id) on its access
// log line; an API whose authentication is not the partner's sets it.
func SetLogIdentity(c echo.Context, name, id string) { c.Set(logIdentityKey, [2]string{name, id}) }

// StatusClientClosedRequest is the status logged and counted for a request whose
// client went away before its answer (nginx's convention): such a request is
// neither a server error nor anything the client saw.
const StatusClientClosedRequest = 499

// clientContextKey holds, in the echo context, the request's context as the
// server created it: it is cancelled only when the client goes away (deadlines
// of our own are set on contexts derived from it).
const clientContextKey = "partnerd.client_context"

// clientGone reports whether the client of c's request went away (closed the
// connection, or cancelled an HTTP/2 stream) before the request was answered.
func clientGone(c echo.Context) bool {
	ctx, ok := c.Get(clientContextKey).(context.Context)
	return ok && errors.Is(ctx.Err(), context.Canceled)
}

// AccessLog writes one structured line per request, at the level its status
// calls for (accessLogLevel), so a log filtered to WARN shows the refused
// requests and one filtered to ERROR the server's faults, without the traffic
// that went well.
func AccessLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			c.Set(clientContextKey, c.Request().Context())
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			if clientGone(c) {
				// Whatever was written went nowhere; the metrics middleware (outside
				// this one) reads the status from here too.
				c.Response().Status = StatusClientClosedRequest
			}
			// The trace_id (and span_id) come from the request's context, through
			// the log handler (tracing.LogHandler), when the request is in a trace.
			attrs := []any{
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID),
				"method", c.Request().Method,
				"route", c.Path(),
				"status", c.Response().Status,
				"latency_ms", time.Since(start).Milliseconds(),
			}
			if who, ok := c.Get(logIdentityKey).([2]string); ok {
				attrs = append(attrs, who[0], who[1])
			}
			log.Log(c.Request().Context(), accessLogLevel(c.Response().Status), "request", attrs...)
			return nil
		}
	}
}

// accessLogLevel is the level of a request's access log line: ERROR for a 5xx
// (the service failed), WARN for a 4xx (a refused request: a flood of 401s or
// 429s is worth seeing, and a client that went away, 499, may have waited on
// us), INFO otherwise.
func accessLogLevel(status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelError
	case status >= 400:
		return slog.LevelWarn
	default:
		return slog.LevelInfo
	}
}

// RouteOnEscapedPath makes Echo route on the path as it was sent (percent-escapes
// kept), whatever it contains, so a path parameter is unescaped exactly once, by
// the generated binder. Echo routes on URL.RawPath, which net/url leaves empty
// when the escaping is the default one: then parameters would arrive unescaped
// and a reference holding "%41" (sent as "%2541") would be read as "A".
func RouteOnEscapedPath(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		u.RawPath = u.EscapedPath()
		return next(c)
	}
}
