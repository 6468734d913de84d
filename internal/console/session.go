package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Session lifetimes: an idle session ends after IdleTimeout, any session after
// AbsoluteTimeout.
const (
	IdleTimeout     = 30 * time.Minute
	AbsoluteTimeout = 12 * time.Hour
	cookieName      = "console_session"
)

// session is one signed-in operator. The operator key stays in this process's
// memory (the console calls the operator API with it); the browser holds only a
// random session id.
type session struct {
	id         string
	operatorID uuid.UUID
	name       string
	key        string
	csrf       string
	created    time.Time
	seen       time.Time
}

type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
	now  func() time.Time
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *sessions) create(operatorID uuid.UUID, name, key string) *session {
	now := s.now()
	ss := &session{id: randomToken(), operatorID: operatorID, name: name, key: key, csrf: randomToken(), created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, old := range s.byID { // drop expired sessions as new ones arrive
		if s.expired(old, now) {
			delete(s.byID, id)
		}
	}
	s.byID[ss.id] = ss
	return ss
}

func (s *sessions) expired(ss *session, now time.Time) bool {
	return now.Sub(ss.seen) > IdleTimeout || now.Sub(ss.created) > AbsoluteTimeout
}

// get returns the live session of r, touching it, or nil.
func (s *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[c.Value]
	if ss == nil {
		return nil
	}
	now := s.now()
	if s.expired(ss, now) {
		delete(s.byID, ss.id)
		return nil
	}
	ss.seen = now
	return ss
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	delete(s.byID, id)
	s.mu.Unlock()
}

// validCSRF reports whether the form's token is the session's.
func (ss *session) validCSRF(r *http.Request) bool {
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) == 1
}

// limiter counts failed sign-ins per client address: after maxFailures within
// failureWindow, sign-in is refused until the window passes.
type limiter struct {
	mu       sync.Mutex
	failures map[string][]time.Time
	now      func() time.Time
}

const (
	maxFailures   = 5
	failureWindow = 5 * time.Minute
)

func (l *limiter) blocked(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recent(addr)) >= maxFailures
}

func (l *limiter) recent(addr string) []time.Time {
	now := l.now()
	var keep []time.Time
	for _, t := range l.failures[addr] {
		if now.Sub(t) < failureWindow {
			keep = append(keep, t)
		}
	}
	l.failures[addr] = keep
	return keep
}

func (l *limiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures[addr] = append(l.recent(addr), l.now())
}
