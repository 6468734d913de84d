package webkit

import (
	"context"
	"time"
)

// FormStore keeps the forms already acted on: the database (store.Store).
type FormStore interface {
	RecordForm(ctx context.Context, scope, key string, now time.Time, keep int, ttl time.Duration) (bool, error)
}

// Sent forms are remembered per scope (a partner, so no one fills another's
// record): at most FormsKept each, for FormTTL, and a form's key is at most
// MaxFormKey bytes (the pages send a UUID), so no stranger can grow the record.
const (
	FormsKept  = 200
	FormTTL    = 24 * time.Hour
	MaxFormKey = 64
)

// Forms records which forms were acted on, so a form sent twice (a double
// click, a reload of its answer) acts once, whatever instance each sending
// reaches.
type Forms struct {
	st  FormStore
	now func() time.Time
}

// NewForms returns the record kept in st.
func NewForms(st FormStore, now func() time.Time) *Forms {
	if now == nil {
		now = time.Now
	}
	return &Forms{st: st, now: now}
}

// First records the form key of scope and reports whether it is the first
// sending. A key longer than MaxFormKey is never recorded and never first (no
// page sends one); an empty key (a form without one) always acts.
func (f *Forms) First(ctx context.Context, scope, key string) (bool, error) {
	if key == "" {
		return true, nil
	}
	if len(key) > MaxFormKey {
		return false, nil
	}
	return f.st.RecordForm(ctx, scope, key, f.now().UTC().Truncate(time.Microsecond), FormsKept, FormTTL)
}
