package dashboard

import (
	"time"

	"github.com/google/uuid"

	"partnerd/internal/partnerusers"
	"partnerd/internal/web/webkit"
)

// Session lifetimes: an idle session ends after IdleTimeout, any session after
// AbsoluteTimeout; a sign-in waiting for its second factor after PendingTimeout.
const (
	IdleTimeout       = 30 * time.Minute
	AbsoluteTimeout   = 12 * time.Hour
	PendingTimeout    = 5 * time.Minute
	pendingCookieName = "dashboard_signin"
)

// Failed sign-ins (wrong passwords and wrong codes) are counted before their
// check (webkit.Limiter), by where they come from. A browser that signed in to
// the account before (its device cookie, webkit.Devices) has a budget of its
// own (deviceLimit). Any other attempt counts against its client address
// (addressLimit) and against the account, across every address, with growing
// back-off (accountLimit): strangers share one budget per account whatever
// addresses they use, and exhausting it never locks out the owner's browser.
// The second factor, which only someone with the password reaches, and the
// account page's current password count per user instead of per account.
var (
	addressLimit = webkit.Limit{Max: 20, Window: 15 * time.Minute}
	accountLimit = webkit.Limit{Max: 5, Window: 15 * time.Minute, Backoff: true}
	deviceLimit  = webkit.Limit{Max: 5, Window: 15 * time.Minute, Backoff: true}
)

// visitor is what a dashboard session holds: the user, their partner and the
// session epoch it was made under. Role and Email are refreshed from the user on
// every request (a changed role applies at once).
//
// A session's data are stored (JSON) in the database with it.
type visitor struct {
	UserID, PartnerID uuid.UUID
	Email             string
	Role              partnerusers.Role
	Epoch             int64
	PartnerName       string
}

// session is one signed-in user's session.
type session = webkit.Session[visitor]

// pendingSignIn is a sign-in whose password was right, waiting for the choice of
// partner (Candidates, when the address is on several teams) or for the second
// factor (UserID set).
type pendingSignIn struct {
	Candidates []uuid.UUID
	UserID     uuid.UUID
	PartnerID  uuid.UUID
	Email      string
}
