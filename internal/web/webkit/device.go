package webkit

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"partnerd/internal/kit/secrets"
)

// Devices are the device cookies of a site (OWASP's "slow down online guessing
// with device cookies"): a browser that signed in to an account is given a
// cookie naming that account, sealed with SECRETS_KEYS so no one can write one.
// Its sign-ins to that account are counted against a budget of its own, so a
// flood of guesses against the account from elsewhere, which exhausts the
// account's shared budget, cannot lock its owner out; a guesser holding no such
// cookie shares the account's budget with every other stranger.
type Devices struct {
	// Cookie is the cookie's name, Path the site's base path; Secure marks it
	// Secure (production).
	Cookie, Path string
	Secure       bool
	// Keys seal and open the cookies (nil: no browser is ever trusted).
	Keys *secrets.Keyring
	Now  func() time.Time
}

// DeviceTTL is how long a device cookie names its browser as the account's
// after the sign-in that issued it (each sign-in issues a new one).
const DeviceTTL = 180 * 24 * time.Hour

// device is what a device cookie holds, sealed.
type device struct {
	Account string `json:"a"`
	Nonce   string `json:"n"`
	Expires int64  `json:"e"`
}

// sealContext binds a cookie to its cookie name (the site), so one site's
// device cookie means nothing to another's.
func (d Devices) sealContext() string { return "device:" + d.Cookie }

// Trust sets a new device cookie naming account on w: r's browser has just
// signed in to it.
func (d Devices) Trust(w http.ResponseWriter, account string) {
	if d.Keys == nil {
		return
	}
	b, _ := json.Marshal(device{Account: account, Nonce: RandomToken(), Expires: d.Now().Add(DeviceTTL).Unix()})
	id, sealed := d.Keys.Seal(string(b), d.sealContext())
	http.SetCookie(w, &http.Cookie{Name: d.Cookie, Value: id + ":" + sealed, Path: d.Path, MaxAge: int(DeviceTTL.Seconds()),
		HttpOnly: true, Secure: d.Secure, SameSite: http.SameSiteStrictMode})
}

// Of returns the budget key of r's device when its cookie opens, names account
// and has not expired ("" otherwise: the browser is a stranger's to account).
func (d Devices) Of(r *http.Request, account string) string {
	if d.Keys == nil {
		return ""
	}
	c, err := r.Cookie(d.Cookie)
	if err != nil || len(c.Value) > 1024 {
		return ""
	}
	id, sealed, ok := strings.Cut(c.Value, ":")
	if !ok {
		return ""
	}
	plain, err := d.Keys.Open(id, sealed, d.sealContext())
	if err != nil {
		return ""
	}
	var dev device
	if json.Unmarshal([]byte(plain), &dev) != nil || dev.Account != account || dev.Nonce == "" || d.Now().Unix() >= dev.Expires {
		return ""
	}
	return dev.Nonce
}
