package console

import (
	"encoding/hex"
	"net/http"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apikeys"
	"partnerd/internal/web/webkit"
)

// Session lifetimes: an idle session ends after IdleTimeout, any session after
// AbsoluteTimeout.
const (
	IdleTimeout     = 30 * time.Minute
	AbsoluteTimeout = 12 * time.Hour
)

// Failed sign-ins are counted before the key is checked (webkit.Limiter), in
// the database so every instance's attempts add up, with back-off (each full
// window makes the next longer). A browser that signed in with the key before
// (its device cookie, webkit.Devices) has a budget of its own (deviceLimit).
// Any other attempt counts against its client address and against the key it
// names (its visible prefix, apikeys.Prefix) across every address: guesses at
// one operator's key from anywhere share one budget, and exhausting it never
// locks out that operator's browser.
var (
	signInLimit = webkit.Limit{Max: 5, Window: 5 * time.Minute, Backoff: true}
	keyLimit    = webkit.Limit{Max: 5, Window: 5 * time.Minute, Backoff: true}
	deviceLimit = webkit.Limit{Max: 5, Window: 5 * time.Minute, Backoff: true}
)

// deviceAccount names the key typed in device cookies and limits: its visible
// prefix (never the key), in hex so any bytes typed make a valid name.
func deviceAccount(key string) string {
	return "key:" + hex.EncodeToString([]byte(apikeys.Prefix(key)))
}

// attempt is where a sign-in with key comes from: its limiter keys and its
// sources at the sign-in gate (webkit.Gate).
func (c *Console) attempt(r *http.Request, key string) ([]webkit.Key, []string) {
	addr := webkit.ClientAddr(r)
	if dev := c.site.Devices.Of(r, deviceAccount(key)); dev != "" {
		return []webkit.Key{{Name: "console:device:" + dev, Limit: deviceLimit}}, []string{"address:" + addr, "device:" + dev}
	}
	return []webkit.Key{{Name: "console:address:" + addr, Limit: signInLimit}, {Name: "console:" + deviceAccount(key), Limit: keyLimit}},
		[]string{"address:" + addr, deviceAccount(key)}
}

// signedIn is what a console session holds (in the database, as JSON): the
// operator and the hash of the key they signed in with (the console calls the
// operator API in process as that key, operatorapi.WithKeyHash; the key itself
// is kept nowhere). The browser holds only the random session token.
type signedIn struct {
	OperatorID uuid.UUID
	Name       string
	KeyHash    string
}

// session is one signed-in operator's session.
type session = webkit.Session[signedIn]
