// Package sign signs and verifies webhook deliveries the way the Standard Webhooks
// specification (standardwebhooks.com) describes, so that partners can check them
// with any of its libraries. A signature is
//
//	v1,<base64 HMAC-SHA256(key, "<id>.<unix timestamp>.<body>")>
//
// where key is the base64-decoded part of a "whsec_" secret. While a rotated-out
// secret still signs, the signature header carries one signature per secret,
// space-separated, and a receiver that knows either secret accepts the delivery.
//
// Every delivery carries the values twice: under the specification's
// webhook-id, webhook-timestamp and webhook-signature headers, which its libraries
// read, and under X-Service-Webhook-Id, X-Service-Webhook-Timestamp and
// X-Service-Webhook-Signature, the names partners integrated against first.
package sign

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the Standard Webhooks specification, which its libraries read.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Header names carrying the same values under the service's own prefix, kept so
// that receivers written against them keep working.
const (
	ServiceHeaderID        = "X-Service-Webhook-Id"
	ServiceHeaderTimestamp = "X-Service-Webhook-Timestamp"
	ServiceHeaderSignature = "X-Service-Webhook-Signature"
)

// SecretPrefix starts every signing secret, so a secret is recognisable wherever
// it is pasted and cannot be mistaken for the raw key.
const SecretPrefix = "whsec_"

// SecretBytes is the size of the random key in a secret made by NewSecret: 256
// bits, as strong as HMAC-SHA256's output and within the specification's 24 to
// 64 bytes.
const SecretBytes = 32

// DefaultTolerance is how far a delivery's timestamp may be from the receiver's
// clock when Verify is given no tolerance; it bounds how long a captured delivery
// can be replayed, as the specification recommends.
const DefaultTolerance = 5 * time.Minute

// The limits the specification sets on a key's length. Shorter keys are too weak,
// and a key outside them is almost always a truncated or mangled paste.
const (
	minKeyBytes = 24
	maxKeyBytes = 64
)

// signatureVersion prefixes each signature; the specification reserves other
// versions (such as asymmetric v1a) that this package neither makes nor accepts.
const signatureVersion = "v1,"

// Errors returned by this package, distinct so that callers can tell a
// misconfiguration (a bad secret) from a delivery that is merely not authentic,
// and report why a delivery was refused.
var (
	// ErrMalformedSecret means a secret is not "whsec_" followed by the standard
	// base64 of a 24 to 64 byte key.
	ErrMalformedSecret = errors.New("malformed webhook secret")
	// ErrNoSecret means Headers was asked to sign with no secret at all.
	ErrNoSecret = errors.New("no webhook secret to sign with")
	// ErrMissingHeaders means a delivery lacks its id, timestamp or signature
	// header in both header families.
	ErrMissingHeaders = errors.New("missing webhook id, timestamp or signature header")
	// ErrBadTimestamp means a delivery's timestamp is not unix seconds or is
	// further from now than the tolerance allows.
	ErrBadTimestamp = errors.New("bad webhook timestamp")
	// ErrNoMatchingSignature means none of a delivery's signatures was made with
	// the secret: the body, id or timestamp were altered, or the secret differs.
	ErrNoMatchingSignature = errors.New("no matching webhook signature")
)

// NewSecret returns a fresh signing secret, "whsec_" and the standard base64 of
// 32 random bytes, so that each endpoint gets its own unguessable key.
func NewSecret() (string, error) {
	key := make([]byte, SecretBytes)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("generate webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseSecret checks a secret and returns its HMAC key, so that a command or
// configuration can refuse a bad secret at start instead of at the first delivery.
func ParseSecret(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: it must start with %q", ErrMalformedSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("%w: the part after %q is not standard base64", ErrMalformedSecret, SecretPrefix)
	}
	if len(key) < minKeyBytes || len(key) > maxKeyBytes {
		return nil, fmt.Errorf("%w: the key is %d bytes, want %d to %d", ErrMalformedSecret, len(key), minKeyBytes, maxKeyBytes)
	}
	return key, nil
}

// Signature returns the "v1,<base64>" signature of one delivery under secret, so
// that a receiver holding the secret can tell the delivery is authentic and unaltered.
// Only ts's whole seconds are signed, as the timestamp header carries.
func Signature(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := ParseSecret(secret)
	if err != nil {
		return "", err
	}
	return signatureVersion + base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body)), nil
}

// Headers returns the six headers of a delivery attempt at ts: the id, the
// timestamp and the signatures under both header families. The signature value
// holds one signature per secret in the given order, space-separated, so that
// receivers still holding a rotated-out secret keep verifying during the overlap.
func Headers(secrets []string, id string, ts time.Time, body []byte) (http.Header, error) {
	if len(secrets) == 0 {
		return nil, ErrNoSecret
	}
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sig, err := Signature(s, id, ts, body)
		if err != nil {
			return nil, err
		}
		sigs = append(sigs, sig)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	sig := strings.Join(sigs, " ")
	h := make(http.Header, 6)
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, stamp)
	h.Set(HeaderSignature, sig)
	h.Set(ServiceHeaderID, id)
	h.Set(ServiceHeaderTimestamp, stamp)
	h.Set(ServiceHeaderSignature, sig)
	return h, nil
}

// MessageID returns the delivery's webhook id from the header family Verify reads,
// so that a receiver deduplicates on exactly the id whose signature it checked.
// It is empty when the headers are incomplete.
func MessageID(h http.Header) string {
	id, _, _ := fields(h)
	return id
}

// Verify checks that a delivery was signed with secret and is recent, so that a
// receiver acts only on authentic, unaltered and unreplayed events. It reads the
// webhook-* headers, or the X-Service-Webhook-* ones when those are incomplete;
// accepts the delivery when its timestamp is within tolerance of now either way
// (DefaultTolerance when tolerance is not positive); and when any of the
// space-separated v1 signatures matches, compared in constant time.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	id, stamp, sigs := fields(h)
	if id == "" {
		return ErrMissingHeaders
	}
	unix, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not unix seconds", ErrBadTimestamp, stamp)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if skew := now.Sub(time.Unix(unix, 0)); skew > tolerance || skew < -tolerance {
		return fmt.Errorf("%w: %s is %s away from now, beyond ±%s", ErrBadTimestamp,
			time.Unix(unix, 0).UTC().Format(time.RFC3339), skew.Round(time.Second).Abs(), tolerance)
	}
	want := make([]byte, base64.StdEncoding.EncodedLen(sha256.Size))
	base64.StdEncoding.Encode(want, mac(key, id, unix, body))
	for _, sig := range strings.Fields(sigs) {
		got, ok := strings.CutPrefix(sig, signatureVersion)
		if ok && hmac.Equal([]byte(got), want) {
			return nil
		}
	}
	return ErrNoMatchingSignature
}

// fields returns the id, timestamp and signature of one header family: the
// specification's when all three are present, else the service's when all three
// are, else empty strings. Never mixing families keeps what is verified coherent.
func fields(h http.Header) (id, stamp, sigs string) {
	for _, f := range [2][3]string{
		{HeaderID, HeaderTimestamp, HeaderSignature},
		{ServiceHeaderID, ServiceHeaderTimestamp, ServiceHeaderSignature},
	} {
		id, stamp, sigs = h.Get(f[0]), h.Get(f[1]), h.Get(f[2])
		if id != "" && stamp != "" && sigs != "" {
			return id, stamp, sigs
		}
	}
	return "", "", ""
}

// mac is HMAC-SHA256 over "<id>.<unix>.<body>", the specification's signed content.
func mac(key []byte, id string, unix int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, unix, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}
