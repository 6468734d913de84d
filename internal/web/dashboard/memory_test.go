package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// argon2MiB is the memory of one argon2id verification (partnerusers'
// parameters: m=19456 KiB, OWASP's first recommended configuration).
const argon2MiB = 19

const mib = 1 << 20

// 60 parallel sign-ins from 60 addresses (behind a trusted proxy, so no
// address limit refuses them) keep the heap in use within a stated bound, while
// the same burst without slots would hold 60 × 19 MiB = 1,140 MiB of argon2
// memory at once. (They name one account, so the sign-in gate admits two of them
// at a time and refuses the rest at once; the bound below is the hash slots',
// which holds whatever admits them.) The bound on the growth of HeapInuse over the burst is
//
//	3 × HashSlots × 19 MiB   (the slots' live argon2 memory; as much again of
//	                          finished hashes' garbage awaiting the collector;
//	                          and as much again that the slots, freed meanwhile,
//	                          allocate while a concurrent collection runs)
//	+ baseline / 10          (the collector's headroom: GOGC is 10 for the burst)
//	+ 32 MiB                 (the 60 requests' own buffers, rows and pages)
//
// which with 4 slots is about 265 MiB over a baseline of some 40 MiB (growths
// of 95 to 135 MiB were measured on 2 cores; with the slots lifted to 60, 380
// to 630 MiB on PostgreSQL, where the 60 reach argon2 together; on SQLite the
// user lookups before the hash come one at a time, so there the bound holds
// without showing much of the slots' part). GOGC is
// lowered during the burst so that HeapInuse follows live memory rather than
// the collector's pace (at the default of 100 the heap may double before a
// collection, whatever is live). Each sign-in that was checked (not refused 503
// for want of a slot) ran one verification, so TotalAlloc grows by at least 19
// MiB for each: the burst really allocated that much, and never held it at
// once. The peak is sampled with runtime.ReadMemStats while the burst runs
// (a sample can only miss a peak, never invent one); nothing is timed. The test
// is not parallel, so no other test allocates meanwhile.
func TestSignInBurstMemoryBound(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			env := apitest.Start(t, db, map[string]string{"TRUSTED_PROXIES": "127.0.0.0/8"})
			base := env.Root + "/dashboard"
			u := newUser(t, env, env.PartnerID(t, env.NewPartner(t)), partnerusers.Admin)
			// A first sign-in builds what is built once (templates, the dummy hash).
			require.Equal(t, http.StatusSeeOther, postSignIn(t, noRedirects(t), base, u.Email, testPassword, "192.0.2.1"))
			// Each client holds its sign-in page's token first, so the 60 forms
			// are sent at once (released together) and meet in the service.
			type signer struct {
				c    *http.Client
				csrf string
			}
			signers := make([]signer, 60)
			for i := range signers {
				c := noRedirects(t)
				res, err := c.Get(base + "/signin")
				require.NoError(t, err)
				_, page, _ := readAnswer(t, res)
				signers[i] = signer{c: c, csrf: csrfOf(t, page)}
			}

			defer debug.SetGCPercent(debug.SetGCPercent(10))
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var peak atomic.Uint64
			stop, sampled := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(sampled)
				var m runtime.MemStats
				for {
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
				}
			}()

			var checked, busy atomic.Int32
			var wg sync.WaitGroup
			release := make(chan struct{})
			for i, sg := range signers {
				form := url.Values{"csrf": {sg.csrf}, "email": {u.Email}, "password": {testPassword}}.Encode()
				req, err := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(form))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-release
					res, err := sg.c.Do(req)
					if !assert.NoError(t, err) {
						return
					}
					_ = res.Body.Close()
					switch res.StatusCode {
					case http.StatusSeeOther:
						checked.Add(1)
					case http.StatusServiceUnavailable:
						busy.Add(1)
					default:
						assert.Fail(t, "unexpected status", "%d", res.StatusCode)
					}
				}()
			}
			close(release)
			wg.Wait()
			close(stop)
			<-sampled
			runtime.ReadMemStats(&after)

			bound := uint64(3*partnerusers.HashSlots*argon2MiB*mib) + before.HeapInuse/10 + 32*mib
			growth := peak.Load() - min(peak.Load(), before.HeapInuse)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("HeapInuse %d MiB before, peak %d MiB (growth %d MiB, bound %d MiB); TotalAlloc +%d MiB; %d checked, %d busy",
				before.HeapInuse/mib, peak.Load()/mib, growth/mib, bound/mib, allocated/mib, checked.Load(), busy.Load())
			require.Equal(t, int32(60), checked.Load()+busy.Load())
			require.Positive(t, checked.Load())
			require.GreaterOrEqual(t, allocated, uint64(checked.Load())*argon2MiB*mib, "every checked sign-in ran its verification")
			require.LessOrEqual(t, growth, bound, "the heap in use stays within the slots' memory")
		})
	}
}
