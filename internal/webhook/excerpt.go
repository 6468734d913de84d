package webhook

import (
	"strings"
	"unicode/utf8"
)

// ExcerptBytes is how much of a receiver's response body an attempt keeps:
// enough to read an error message or a framework's error page title, small
// enough to keep for every attempt of every event.
const ExcerptBytes = 256

// Excerpt is the text an attempt keeps of a response body that starts with
// head: at most its first ExcerptBytes bytes, without a character cut at the
// end, with bytes that are not UTF-8 (and NUL, which PostgreSQL text cannot
// hold) replaced by U+FFFD, so the excerpt is valid text on both databases and
// in JSON whatever the receiver sent.
func Excerpt(head []byte) string {
	if len(head) > ExcerptBytes {
		head = head[:ExcerptBytes]
	}
	// Drop a last character the cut split: up to 3 trailing bytes that begin a
	// sequence utf8 cannot decode whole.
	for i := 1; i <= utf8.UTFMax-1 && i <= len(head); i++ {
		b := head[len(head)-i]
		if b < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(b) {
			if r, _ := utf8.DecodeRune(head[len(head)-i:]); r == utf8.RuneError && !utf8.FullRune(head[len(head)-i:]) {
				head = head[:len(head)-i]
			}
			break
		}
	}
	s := strings.ToValidUTF8(string(head), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// Brief says in a few words why an attempt got no answer, from the error it
// recorded (a transport error's text names the URL and the dialed address,
// which an operator's overview does not need): a refused connection, a
// timeout, an address the policy refuses, an unknown host, a TLS failure; any
// other error is its last clause, cut to briefMax bytes.
func Brief(msg string) string {
	for _, k := range []struct{ in, say string }{
		{"endpoint refused", "address not allowed"},
		{"connection refused", "connection refused"},
		{"no answer within", "timed out"},
		{"deadline exceeded", "timed out"},
		{"timeout", "timed out"},
		{"no such host", "host not found"},
		{"connection reset", "connection reset"},
		{"tls:", "TLS handshake failed"},
		{"x509:", "TLS certificate refused"},
		{"EOF", "connection closed without an answer"},
	} {
		if strings.Contains(msg, k.in) {
			return k.say
		}
	}
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	for len(msg) > briefMax {
		_, size := utf8.DecodeLastRuneInString(msg)
		msg = msg[:len(msg)-size]
	}
	return msg
}

// briefMax is the longest Brief.
const briefMax = 80
