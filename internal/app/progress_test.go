package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice"
	"partnerd/internal/chain"
	"partnerd/internal/metrics"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// failingOnce fails the next write when armed, as a database that is briefly away.
type failingOnce struct {
	*store.Store
	armed atomic.Bool
}

func (f *failingOnce) SaveChainReading(ctx context.Context, r backoffice.ChainReading) error {
	if f.armed.Swap(false) {
		return errors.New("connection refused")
	}
	return f.Store.SaveChainReading(ctx, r)
}

// The recorder writes a network's reading at most once a second and only when a
// value changed, or as a heartbeat 10 s after the last write while the watcher
// still reports; a silent watcher's reading is left to age. A failed write is
// retried at the next tick (and logged once), and the last change is written when
// the watchers stop, whatever the second. Only an instance whose scanner reports
// (it holds the network's lock) writes.
func TestProgressRecorderWritePolicy(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)

			t0 := store.Now().Add(-time.Hour)
			now := t0
			var logs bytes.Buffer
			fs := &failingOnce{Store: st}
			rec := newProgressRecorder(fs, metrics.New().Chain(), slog.New(slog.NewTextHandler(&logs, nil)), func() time.Time { return now })
			at := func(d time.Duration) { now = t0.Add(d) }
			stored := func() *backoffice.ChainReading {
				t.Helper()
				p, err := st.ChainProgress(ctx)
				require.NoError(t, err)
				return p[chain.BEP20].Reading
			}

			rec.ChainHead(chain.BEP20, 100)
			rec.flush(false)
			r := stored()
			require.EqualValues(t, 100, *r.Head)
			require.Equal(t, t0, *r.HeadAt)
			require.Equal(t, t0, r.UpdatedAt)
			require.Nil(t, r.Finalized)
			require.Empty(t, r.Finality)

			at(500 * time.Millisecond)
			rec.ChainHead(chain.BEP20, 101)
			rec.flush(false)
			require.EqualValues(t, 100, *stored().Head, "not twice within a second")
			at(time.Second)
			rec.flush(false)
			r = stored()
			require.EqualValues(t, 101, *r.Head)
			require.Equal(t, t0.Add(500*time.Millisecond), *r.HeadAt, "when it was read")
			require.Equal(t, t0.Add(time.Second), r.UpdatedAt)

			at(3 * time.Second)
			rec.ChainHead(chain.BEP20, 101)
			rec.ChainScanned(chain.BEP20, 99)
			rec.flush(false)
			require.Equal(t, t0.Add(time.Second), stored().UpdatedAt, "nothing changed: no write")
			at(11 * time.Second)
			rec.ChainHead(chain.BEP20, 101)
			rec.flush(false)
			r = stored()
			require.Equal(t, t0.Add(11*time.Second), r.UpdatedAt, "the heartbeat")
			require.Equal(t, t0.Add(11*time.Second), *r.HeadAt)
			at(40 * time.Second)
			rec.flush(false)
			require.Equal(t, t0.Add(11*time.Second), stored().UpdatedAt, "a silent watcher writes nothing: its reading ages")

			// Finality and finalized block; the state's since is kept while it holds.
			at(41 * time.Second)
			rec.ChainFinalized(chain.BEP20, 98)
			rec.ChainFinality(chain.BEP20, chain.FinalityTag)
			rec.flush(false)
			at(43 * time.Second)
			rec.ChainFinality(chain.BEP20, chain.FinalityTag)
			rec.ChainFinalized(chain.BEP20, 99)
			rec.flush(false)
			r = stored()
			require.EqualValues(t, 99, *r.Finalized)
			require.Equal(t, t0.Add(43*time.Second), *r.FinalizedAt)
			require.Equal(t, chain.FinalityTag, r.Finality)
			require.Equal(t, t0.Add(41*time.Second), *r.FinalitySince)
			at(45 * time.Second)
			rec.ChainFinality(chain.BEP20, chain.FinalityUnknown)
			rec.flush(false)
			r = stored()
			require.Equal(t, chain.FinalityUnknown, r.Finality)
			require.Equal(t, t0.Add(45*time.Second), *r.FinalitySince)

			// Providers: stored as reported; the same report again is no change.
			since := t0.Add(44 * time.Second)
			providers := []chain.ProviderState{
				{Name: "https://a.example", State: chain.ProviderActive, Head: 101, Since: since},
				{Name: "wss://b.example", State: chain.ProviderFailing, Head: 90, Error: "timeout after 10s", Push: true, Since: since},
			}
			at(47 * time.Second)
			rec.ChainProviders(chain.BEP20, providers)
			rec.flush(false)
			require.Equal(t, providers, stored().Providers)
			at(49 * time.Second)
			rec.ChainProviders(chain.BEP20, []chain.ProviderState{providers[0], providers[1]})
			rec.flush(false)
			require.Equal(t, t0.Add(47*time.Second), stored().UpdatedAt, "the same providers: no write")

			// A failed write is retried at the next tick and logged once.
			at(51 * time.Second)
			fs.armed.Store(true)
			rec.ChainHead(chain.BEP20, 102)
			rec.flush(false)
			require.EqualValues(t, 101, *stored().Head)
			require.Contains(t, logs.String(), "chain progress not stored")
			at(52 * time.Second)
			rec.flush(false)
			require.EqualValues(t, 102, *stored().Head, "retried")
			require.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("chain progress not stored")))

			// The pool may report providers on an instance whose scanner does not hold
			// the lock: nothing is written until the scanner reports (a failed call
			// counts), and again nothing once it has been silent for two minutes.
			trc := []chain.ProviderState{{Name: "https://api.trongrid.io", State: chain.ProviderFailing, Error: "HTTP 503", Since: t0}}
			progress := func() map[string]backoffice.NetworkProgress {
				p, err := st.ChainProgress(ctx)
				require.NoError(t, err)
				return p
			}
			at(60 * time.Second)
			rec.ChainProviders(chain.TRC20, trc)
			rec.flush(false)
			require.NotContains(t, progress(), chain.TRC20, "no scanner here: not this instance's to write")
			at(62 * time.Second)
			rec.ChainRPCError(chain.TRC20, "timeout")
			rec.flush(false)
			require.Equal(t, trc, progress()[chain.TRC20].Reading.Providers)
			at(62*time.Second + 2*time.Minute + time.Second)
			trc[0].State, trc[0].Error = chain.ProviderStandby, ""
			rec.ChainProviders(chain.TRC20, trc)
			rec.flush(false)
			require.Equal(t, chain.ProviderFailing, progress()[chain.TRC20].Reading.Providers[0].State, "the scanner went silent: the lock may be elsewhere")

			// Stopping writes the last change at once.
			at(62*time.Second + 2*time.Minute + 1100*time.Millisecond)
			rec.ChainHead(chain.BEP20, 103)
			rec.flush(true)
			r = stored()
			require.EqualValues(t, 103, *r.Head)
			require.Equal(t, providers, r.Providers, "the whole reading, not only what changed")
			require.Equal(t, chain.FinalityUnknown, r.Finality)
		})
	}
}
