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

// Failed sign-ins (wrong passwords and wrong codes) are counted per client
// address and per account and address (the address typed and where from; then
// the user, for the second factor and the account page), each attempt reserved
// before its check (webkit.Limiter). An account is limited per address, with
// back-off, so that a stranger guessing from elsewhere never locks its owner
// out; the second factor, which only someone with the password reaches, per user.
var (
	addressLimit = webkit.Limit{Max: 20, Window: 15 * time.Minute}
	accountLimit = webkit.Limit{Max: 5, Window: 15 * time.Minute, Backoff: true}
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
