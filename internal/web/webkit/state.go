package webkit

import "time"

// WebSession is one signed-in browser of a site as the state store keeps it
// (the store maps it to table web_sessions; the tags name its columns).
type WebSession struct {
	// TokenHash is the SHA-256 (hex) of the cookie's token: the token itself is
	// never stored.
	TokenHash string `gorm:"primaryKey"`
	// Site is the site's session kind (its cookie name); Subject whose session it
	// is (a user, an operator), so all of theirs can end at once.
	Site, Subject string
	CSRF          string `gorm:"column:csrf"`
	// Data is the site's own data, encoded by the site (JSON).
	Data                         string
	CreatedAt, SeenAt, ExpiresAt time.Time
}

// AttemptWindow is a key's count of attempts in its current window, as the
// state store keeps it.
type AttemptWindow struct {
	// Count is the attempts counted in the window; Strikes how many windows in a
	// row ended full; End when the window ends (zero for a key never seen).
	Count, Strikes int
	End            time.Time
}
