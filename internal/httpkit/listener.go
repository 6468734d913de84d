package httpkit

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"strconv"
	"strings"

	"partnerd/gen/api"
	"partnerd/internal/kit/apperr"
)

// Listener wraps ln so that the answer net/http gives, before any handler runs,
// to a request it cannot parse leaves in the API's error envelope (400
// invalid_request with an X-Request-Id) instead of Go's plain-text
// "400 Bad Request". That covers bytes HTTP forbids in the request line or a
// header (a raw NUL or other control byte), malformed header names and a missing
// or malformed Host. A NUL sent percent-encoded (%00) reaches the API and its
// string rule instead. Go's other early answers are left as they are: 431 for
// headers over MaxHeaderBytes, 501 for an unknown transfer coding and 505 for an
// unsupported HTTP version, all plain text and without X-Request-Id.
func Listener(ln net.Listener) net.Listener { return envelopeListener{ln} }

type envelopeListener struct{ net.Listener }

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &envelopeConn{Conn: c}, nil
}

// envelopeConn rewrites net/http's own 400 answer. net/http writes it in one Write
// straight to the connection: the status line, then exactly goErrorHeaders, then
// the text. Answers of handlers always carry other headers (X-Request-Id among
// them) before their Content-Type, so they never match.
type envelopeConn struct{ net.Conn }

const (
	goBadRequest   = "HTTP/1.1 400 Bad Request"
	goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
)

func (c *envelopeConn) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte(goBadRequest)) {
		if i := bytes.Index(p, []byte(goErrorHeaders)); i >= 0 && !bytes.Contains(p[:i], []byte("\r\n")) {
			reason := strings.TrimPrefix(strings.TrimPrefix(string(p[:i]), goBadRequest), ": ")
			if _, err := c.Conn.Write(envelopeAnswer(reason)); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// CloseWrite lets net/http half-close the connection as it does a TCP one.
func (c *envelopeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// envelopeAnswer is the whole HTTP answer to a request net/http refused for
// reason (its own words, "" for a malformed request line or header).
func envelopeAnswer(reason string) []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	problem := "holds bytes HTTP does not allow (a control character such as NUL in the request line or a header) or is malformed"
	switch reason {
	case "invalid header name":
		problem = "a header name holds characters HTTP does not allow"
	case "invalid header value":
		problem = "a header value holds bytes HTTP does not allow (a control character such as NUL)"
	case "missing required Host header", "malformed Host header":
		problem = "the Host header is missing or malformed"
	}
	body, _ := json.Marshal(api.Error{
		Success: false,
		Message: "The request is invalid.",
		Error: api.ErrorInfo{Code: api.ErrorCode(apperr.InvalidRequest), RequestId: id,
			Details: []api.ErrorDetail{{Field: "request", Message: problem}}},
	})
	var out bytes.Buffer
	out.WriteString(goBadRequest + "\r\n")
	out.WriteString("Content-Type: application/json\r\n")
	out.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	out.WriteString("Cache-Control: no-store\r\n")
	out.WriteString("X-Content-Type-Options: nosniff\r\n")
	out.WriteString("X-Request-Id: " + id + "\r\n")
	out.WriteString("Connection: close\r\n\r\n")
	out.Write(body)
	return out.Bytes()
}
