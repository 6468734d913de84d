package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"partnerd/internal/web/webkit"
)

// The web sites' shared state (migration 00033): sessions, attempt counts and
// sent forms live in the database, not in a process, so behind a load balancer
// any instance serves any request, a limit counts every instance's attempts, and
// ending a session ends it everywhere at once. The database rather than Redis:
// every instance already has it, both dialects carry it (a local run needs no
// Redis), and a session ends in the same database whose user row disables it.

// WebSession is one signed-in browser of a site (webkit.Session's stored form).
type WebSession = webkit.WebSession

// sessions is the sessions' table.
func (s *Store) sessions(db *gorm.DB) *gorm.DB { return db.Table("web_sessions") }

// InsertWebSession stores ws.
func (s *Store) InsertWebSession(ctx context.Context, ws *WebSession) error {
	return s.sessions(s.write(ctx)).Create(ws).Error
}

// WebSession returns the session of tokenHash unless it expired by now, or
// apperr NotFound.
func (s *Store) WebSession(ctx context.Context, tokenHash string, now time.Time) (*WebSession, error) {
	var ws WebSession
	if err := s.sessions(s.read(ctx)).Where("token_hash = ? AND expires_at > ?", tokenHash, now.UTC()).Take(&ws).Error; err != nil {
		return nil, notFound(err, "session")
	}
	ws.CreatedAt, ws.SeenAt, ws.ExpiresAt = ws.CreatedAt.UTC(), ws.SeenAt.UTC(), ws.ExpiresAt.UTC()
	return &ws, nil
}

// TouchWebSession records that the session of tokenHash was used at seen and now
// expires at expires (a session already ended stays ended).
func (s *Store) TouchWebSession(ctx context.Context, tokenHash string, seen, expires time.Time) error {
	return s.sessions(s.write(ctx)).Where("token_hash = ?", tokenHash).
		Updates(map[string]any{"seen_at": seen.UTC(), "expires_at": expires.UTC()}).Error
}

// DeleteWebSession ends the session of tokenHash (none: nothing to do).
func (s *Store) DeleteWebSession(ctx context.Context, tokenHash string) error {
	return s.sessions(s.write(ctx)).Where("token_hash = ?", tokenHash).Delete(&WebSession{}).Error
}

// DeleteWebSessionsOf ends every session of subject on site (sign out
// everywhere) and returns how many there were.
func (s *Store) DeleteWebSessionsOf(ctx context.Context, site, subject string) (int64, error) {
	res := s.sessions(s.write(ctx)).Where("site = ? AND subject = ?", site, subject).Delete(&WebSession{})
	return res.RowsAffected, res.Error
}

// AttemptWindow is a key's count of attempts in its current window.
type AttemptWindow = webkit.AttemptWindow

type webAttemptRow struct {
	AttemptKey string `gorm:"primaryKey"`
	Attempts   int
	Strikes    int
	WindowEnd  time.Time
}

func (webAttemptRow) TableName() string { return "web_attempts" }

// ReserveAttempt counts one attempt of key unless decide refuses it: decide gets
// the key's window as it is (the row locked, so parallel reservations of one key
// are decided one after the other on both databases) and returns the window to
// store and whether the attempt may go on. It returns the window as stored (or
// as it was, when refused).
func (s *Store) ReserveAttempt(ctx context.Context, key string, decide func(w AttemptWindow) (AttemptWindow, bool)) (AttemptWindow, bool, error) {
	var got AttemptWindow
	var ok bool
	err := s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		db := tx.db.WithContext(ctx)
		if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&webAttemptRow{AttemptKey: key}).Error; err != nil {
			return fmt.Errorf("attempt row: %w", err)
		}
		q := db.Where("attempt_key = ?", key)
		if s.eng.locksRows() {
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		var row webAttemptRow
		if err := q.Take(&row).Error; err != nil {
			return fmt.Errorf("read attempts: %w", err)
		}
		cur := AttemptWindow{Count: row.Attempts, Strikes: row.Strikes, End: row.WindowEnd.UTC()}
		if row.WindowEnd.Unix() <= 0 {
			cur.End = time.Time{}
		}
		next, allow := decide(cur)
		got, ok = cur, allow
		if !allow {
			return nil
		}
		got = next
		return db.Model(&webAttemptRow{}).Where("attempt_key = ?", key).
			Updates(map[string]any{"attempts": next.Count, "strikes": next.Strikes, "window_end": next.End.UTC()}).Error
	})
	return got, ok, err
}

// ReleaseAttempt takes back one attempt of key reserved in the window ending at
// end (the attempt succeeded and is not counted as a failure); a window since
// renewed is left alone.
func (s *Store) ReleaseAttempt(ctx context.Context, key string, end time.Time) error {
	return s.write(ctx).Model(&webAttemptRow{}).Where("attempt_key = ? AND window_end = ? AND attempts > 0", key, end.UTC()).
		Update("attempts", gorm.Expr("attempts - 1")).Error
}

type webFormRow struct {
	Scope   string `gorm:"primaryKey"`
	FormKey string `gorm:"primaryKey"`
	SentAt  time.Time
}

func (webFormRow) TableName() string { return "web_forms" }

// RecordForm records that the form key of scope was sent at now and reports
// whether it was the first time. A scope keeps at most keep forms (the oldest
// are forgotten first), each for ttl: a form older than that acts again.
func (s *Store) RecordForm(ctx context.Context, scope, key string, now time.Time, keep int, ttl time.Duration) (bool, error) {
	first := false
	err := s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		db := tx.db.WithContext(ctx)
		if err := db.Where("scope = ? AND sent_at <= ?", scope, now.Add(-ttl).UTC()).Delete(&webFormRow{}).Error; err != nil {
			return fmt.Errorf("forget old forms: %w", err)
		}
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&webFormRow{Scope: scope, FormKey: key, SentAt: now.UTC()})
		if res.Error != nil {
			return fmt.Errorf("record form: %w", res.Error)
		}
		first = res.RowsAffected == 1
		if !first {
			return nil
		}
		newest := db.Model(&webFormRow{}).Select("form_key").Where("scope = ?", scope).
			Order("sent_at DESC").Order("form_key DESC").Limit(keep)
		return db.Where("scope = ? AND form_key NOT IN (?)", scope, newest).Delete(&webFormRow{}).Error
	})
	return first, err
}

// FormCount is how many forms scope remembers (the bound's tests).
func (s *Store) FormCount(ctx context.Context, scope string) (int64, error) {
	var n int64
	err := s.read(ctx).Model(&webFormRow{}).Where("scope = ?", scope).Count(&n).Error
	return n, err
}

// PurgeWebState deletes what no request can use any more: sessions expired by
// now, attempt windows ended a day before now (their back-off forgotten) and
// forms older than a day. It returns how many rows went.
func (s *Store) PurgeWebState(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	var errs []error
	for _, del := range []*gorm.DB{
		s.sessions(s.write(ctx)).Where("expires_at <= ?", now.UTC()).Delete(&WebSession{}),
		s.write(ctx).Where("window_end <= ?", now.Add(-24*time.Hour).UTC()).Delete(&webAttemptRow{}),
		s.write(ctx).Where("sent_at <= ?", now.Add(-24*time.Hour).UTC()).Delete(&webFormRow{}),
	} {
		n += del.RowsAffected
		errs = append(errs, del.Error)
	}
	return n, errors.Join(errs...)
}
