package console

import (
	"time"

	"github.com/google/uuid"

	"partnerd/internal/web/webkit"
)

// Session lifetimes: an idle session ends after IdleTimeout, any session after
// AbsoluteTimeout.
const (
	IdleTimeout     = 30 * time.Minute
	AbsoluteTimeout = 12 * time.Hour
)

// Sign-ins per client address: each attempt is reserved before the key is
// checked, and after signInLimit.Max failures within its window sign-in is
// refused there until the window passes (longer each time: back-off). Counted
// in the database, so every instance's attempts add up.
var signInLimit = webkit.Limit{Max: 5, Window: 5 * time.Minute, Backoff: true}

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
