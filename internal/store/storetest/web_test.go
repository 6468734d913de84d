package storetest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// TestWebState: the sites' sessions are found by token hash until they expire,
// touched, ended one at a time or all of one subject; attempts are reserved one
// decision at a time under parallel callers and handed back only within their
// window; sent forms are first once per scope, bounded and forgotten; the purge
// removes only what no request can use.
func TestWebState(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		now := store.Now()
		ws := &store.WebSession{TokenHash: "h1", Site: "site", Subject: "user:1", CSRF: "c", Data: `{"a":1}`,
			CreatedAt: now, SeenAt: now, ExpiresAt: now.Add(time.Hour)}
		require.NoError(t, s.InsertWebSession(ctx, ws))
		got, err := s.WebSession(ctx, "h1", now)
		require.NoError(t, err)
		require.Equal(t, ws, got)
		_, err = s.WebSession(ctx, "h1", now.Add(time.Hour))
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "expired")
		require.NoError(t, s.TouchWebSession(ctx, "h1", now.Add(time.Minute), now.Add(2*time.Hour)))
		got, err = s.WebSession(ctx, "h1", now.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, now.Add(time.Minute), got.SeenAt)
		require.NoError(t, s.DeleteWebSession(ctx, "h1"))
		_, err = s.WebSession(ctx, "h1", now)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		for _, h := range []string{"h2", "h3"} {
			cp := *ws
			cp.TokenHash = h
			require.NoError(t, s.InsertWebSession(ctx, &cp))
		}
		n, err := s.DeleteWebSessionsOf(ctx, "site", "user:1")
		require.NoError(t, err)
		require.Equal(t, int64(2), n)

		// 30 parallel reservations of a key allowing 7: 7 pass.
		allow := func(w store.AttemptWindow) (store.AttemptWindow, bool) {
			if w.Count >= 7 {
				return w, false
			}
			w.Count++
			w.End = now.Add(time.Minute)
			return w, true
		}
		var mu sync.Mutex
		passed := 0
		var wg sync.WaitGroup
		for range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, ok, err := s.ReserveAttempt(ctx, "k", allow)
				require.NoError(t, err)
				if ok {
					mu.Lock()
					passed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 7, passed)
		require.NoError(t, s.ReleaseAttempt(ctx, "k", now.Add(time.Minute)))
		require.NoError(t, s.ReleaseAttempt(ctx, "k", now.Add(time.Hour)), "another window: nothing")
		w, ok, err := s.ReserveAttempt(ctx, "k", func(w store.AttemptWindow) (store.AttemptWindow, bool) { return w, false })
		require.NoError(t, err)
		require.False(t, ok)
		require.Equal(t, store.AttemptWindow{Count: 6, End: now.Add(time.Minute)}, w)

		// Forms: first once per scope, at most keep, forgotten after ttl.
		first, err := s.RecordForm(ctx, "p", "f1", now, 2, time.Hour)
		require.NoError(t, err)
		require.True(t, first)
		first, err = s.RecordForm(ctx, "p", "f1", now, 2, time.Hour)
		require.NoError(t, err)
		require.False(t, first)
		for i, k := range []string{"f2", "f3"} {
			_, err = s.RecordForm(ctx, "p", k, now.Add(time.Duration(i+1)*time.Second), 2, time.Hour)
			require.NoError(t, err)
		}
		c, err := s.FormCount(ctx, "p")
		require.NoError(t, err)
		require.Equal(t, int64(2), c)
		first, err = s.RecordForm(ctx, "p", "f3", now.Add(2*time.Hour), 2, time.Hour)
		require.NoError(t, err)
		require.True(t, first, "after its ttl a form acts again")

		// The purge: expired sessions, attempt windows a day old, day-old forms.
		cp := *ws
		cp.TokenHash, cp.ExpiresAt = "h4", now.Add(time.Minute)
		require.NoError(t, s.InsertWebSession(ctx, &cp))
		gone, err := s.PurgeWebState(ctx, now.Add(27*time.Hour))
		require.NoError(t, err)
		require.Equal(t, int64(3), gone, "one session, one attempt key, one form")
	})
}
