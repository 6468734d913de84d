package webkit

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"
)

// Session is one signed-in person; Data is the site's own (the console keeps the
// operator and the hash of the key they signed in with, the dashboard the user).
// The browser holds only the random token; the database its hash and the rest.
type Session[T any] struct {
	ID      string
	CSRF    string
	Data    T
	Created time.Time
	Seen    time.Time
}

// ValidCSRF reports whether the form's csrf field is the session's token.
func (s *Session[T]) ValidCSRF(r *http.Request) bool {
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) == 1
}

// SessionConfig is a site's cookie and lifetimes.
type SessionConfig struct {
	// Cookie is the cookie's name (also the kind of session in the database);
	// Path the site's base path (the cookie goes nowhere else).
	Cookie, Path string
	// Secure marks the cookie Secure (production).
	Secure bool
	// Idle ends a session unused this long; Absolute ends any session this old.
	Idle, Absolute time.Duration
	Now            func() time.Time
}

// SessionStore is where sessions live: the database (store.Store), shared by
// every instance, so a session made on one is served by the next and ended on
// all at once.
type SessionStore interface {
	InsertWebSession(ctx context.Context, ws *WebSession) error
	WebSession(ctx context.Context, tokenHash string, now time.Time) (*WebSession, error)
	TouchWebSession(ctx context.Context, tokenHash string, seen, expires time.Time) error
	DeleteWebSession(ctx context.Context, tokenHash string) error
	DeleteWebSessionsOf(ctx context.Context, site, subject string) (int64, error)
	PurgeWebState(ctx context.Context, now time.Time) (int64, error)
}

// touchEvery is how stale a session's last use may be before a request records
// it again: a page view is not a database write, and idle expiry is exact to it.
const touchEvery = time.Minute

// Sessions keeps a site's sessions in the database.
type Sessions[T any] struct {
	cfg SessionConfig
	st  SessionStore
}

// NewSessions returns a site's sessions kept in st.
func NewSessions[T any](cfg SessionConfig, st SessionStore) *Sessions[T] {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sessions[T]{cfg: cfg, st: st}
}

// tokenHash is what the database keeps of a cookie's token.
func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Create starts a session of subject (whose it is: EndAll ends all of theirs)
// holding data and sets its cookie on w (HttpOnly, SameSite=Strict, Secure as
// configured, for the site's path only). Sessions expired by now are purged on
// the way (a sign-in is rare enough to carry it).
func (s *Sessions[T]) Create(ctx context.Context, w http.ResponseWriter, subject string, data T) (*Session[T], error) {
	now := s.cfg.Now().UTC().Truncate(time.Microsecond)
	ss := &Session[T]{ID: RandomToken(), CSRF: RandomToken(), Data: data, Created: now, Seen: now}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	_, _ = s.st.PurgeWebState(ctx, now)
	if err := s.st.InsertWebSession(ctx, &WebSession{TokenHash: tokenHash(ss.ID), Site: s.cfg.Cookie, Subject: subject,
		CSRF: ss.CSRF, Data: string(b), CreatedAt: now, SeenAt: now, ExpiresAt: s.expiry(now, now)}); err != nil {
		return nil, err
	}
	s.cookie(w, ss.ID, int(s.cfg.Absolute.Seconds()))
	return ss, nil
}

func (s *Sessions[T]) expiry(created, seen time.Time) time.Time {
	idle, abs := seen.Add(s.cfg.Idle), created.Add(s.cfg.Absolute)
	if abs.Before(idle) {
		return abs
	}
	return idle
}

func (s *Sessions[T]) cookie(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: s.cfg.Cookie, Value: value, Path: s.cfg.Path, HttpOnly: true, Secure: s.cfg.Secure,
		SameSite: http.SameSiteStrictMode, MaxAge: maxAge})
}

// Get returns the live session of r, touching it, or nil: no cookie, an unknown,
// ended or expired session, or a database out of reach (the person is asked to
// sign in, which then says the site is unavailable).
func (s *Sessions[T]) Get(r *http.Request) *Session[T] {
	c, err := r.Cookie(s.cfg.Cookie)
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil
	}
	now := s.cfg.Now().UTC()
	h := tokenHash(c.Value)
	ws, err := s.st.WebSession(r.Context(), h, now)
	if err != nil || ws.Site != s.cfg.Cookie {
		return nil
	}
	ss := &Session[T]{ID: c.Value, CSRF: ws.CSRF, Created: ws.CreatedAt, Seen: ws.SeenAt}
	if json.Unmarshal([]byte(ws.Data), &ss.Data) != nil {
		return nil
	}
	if now.Sub(ws.SeenAt) >= touchEvery {
		ss.Seen = now.Truncate(time.Microsecond)
		if s.st.TouchWebSession(r.Context(), h, ss.Seen, s.expiry(ss.Created, ss.Seen)) != nil {
			return nil
		}
	}
	return ss
}

// End ends session id and clears the cookie on w.
func (s *Sessions[T]) End(ctx context.Context, w http.ResponseWriter, id string) error {
	s.cookie(w, "", -1)
	return s.st.DeleteWebSession(ctx, tokenHash(id))
}

// EndAll ends every session of subject on this site (sign out everywhere: a
// changed password, a disabled user) and returns how many it ended.
func (s *Sessions[T]) EndAll(ctx context.Context, subject string) (int64, error) {
	return s.st.DeleteWebSessionsOf(ctx, s.cfg.Cookie, subject)
}
