package webkit

import (
	"crypto/subtle"
	"net/http"
	"sync"
	"time"
)

// Session is one signed-in person; Data is the site's own (the console keeps the
// operator and their key, which never leaves this process's memory). The browser
// holds only the random ID.
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
	// Cookie is the cookie's name; Path the site's base path (the cookie goes
	// nowhere else).
	Cookie, Path string
	// Secure marks the cookie Secure (production).
	Secure bool
	// Idle ends a session unused this long; Absolute ends any session this old.
	Idle, Absolute time.Duration
	Now            func() time.Time
}

// Sessions keeps a site's sessions in memory (a restart signs everyone out).
type Sessions[T any] struct {
	cfg  SessionConfig
	mu   sync.Mutex
	byID map[string]*Session[T]
}

// NewSessions returns an empty store.
func NewSessions[T any](cfg SessionConfig) *Sessions[T] {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sessions[T]{cfg: cfg, byID: map[string]*Session[T]{}}
}

// Create starts a session holding data and sets its cookie on w (HttpOnly,
// SameSite=Strict, Secure as configured, for the site's path only).
func (s *Sessions[T]) Create(w http.ResponseWriter, data T) *Session[T] {
	now := s.cfg.Now()
	ss := &Session[T]{ID: RandomToken(), CSRF: RandomToken(), Data: data, Created: now, Seen: now}
	s.mu.Lock()
	for id, old := range s.byID { // drop expired sessions as new ones arrive
		if s.expired(old, now) {
			delete(s.byID, id)
		}
	}
	s.byID[ss.ID] = ss
	s.mu.Unlock()
	s.cookie(w, ss.ID, int(s.cfg.Absolute.Seconds()))
	return ss
}

func (s *Sessions[T]) cookie(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: s.cfg.Cookie, Value: value, Path: s.cfg.Path, HttpOnly: true, Secure: s.cfg.Secure,
		SameSite: http.SameSiteStrictMode, MaxAge: maxAge})
}

func (s *Sessions[T]) expired(ss *Session[T], now time.Time) bool {
	return now.Sub(ss.Seen) > s.cfg.Idle || now.Sub(ss.Created) > s.cfg.Absolute
}

// Get returns the live session of r, touching it, or nil (no cookie, unknown or
// expired: an expired session is forgotten).
func (s *Sessions[T]) Get(r *http.Request) *Session[T] {
	c, err := r.Cookie(s.cfg.Cookie)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[c.Value]
	if ss == nil {
		return nil
	}
	now := s.cfg.Now()
	if s.expired(ss, now) {
		delete(s.byID, ss.ID)
		return nil
	}
	ss.Seen = now
	return ss
}

// End ends session id and clears the cookie on w.
func (s *Sessions[T]) End(w http.ResponseWriter, id string) {
	s.mu.Lock()
	delete(s.byID, id)
	s.mu.Unlock()
	s.cookie(w, "", -1)
}

// EndWhere ends every session whose data match (sign out everywhere: a changed
// password, a disabled user) and returns how many it ended.
func (s *Sessions[T]) EndWhere(match func(T) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, ss := range s.byID {
		if match(ss.Data) {
			delete(s.byID, id)
			n++
		}
	}
	return n
}
