package console

import (
	"time"

	"github.com/google/uuid"

	"partnerd/internal/webkit"
)

// Session lifetimes: an idle session ends after IdleTimeout, any session after
// AbsoluteTimeout.
const (
	IdleTimeout     = 30 * time.Minute
	AbsoluteTimeout = 12 * time.Hour
	cookieName      = "console_session"
)

// Failed sign-ins per client address: after maxFailures within failureWindow,
// sign-in is refused until the window passes.
const (
	maxFailures   = 5
	failureWindow = 5 * time.Minute
)

// signedIn is what a console session holds: the operator and their key, which
// stays in this process's memory (the console calls the operator API with it);
// the browser holds only the random session id.
type signedIn struct {
	operatorID uuid.UUID
	name       string
	key        string
}

// session is one signed-in operator's session.
type session = webkit.Session[signedIn]
