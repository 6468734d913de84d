package audit_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func ptr[T any](v T) *T { return &v }

func TestKnown(t *testing.T) {
	t.Parallel()
	for _, a := range []audit.Action{"fill", "settle", "payout", "fail", "refund", "accept", "resolve_refunded",
		"resolve_credited", "batch_payout", "batch_fill", "partner_created", "operator_created", "key_created", "key_rolled", "key_revoked", "partner_user_invited",
		"partner_user_role_changed", "partner_user_disabled", "webhook_endpoint_updated", "webhook_secret_rotated", "webhook_event_replayed",
		"webhook_test_sent", "sandbox_simulated", "screening_released", "screening_blocked",
		"approval_proposed", "approval_approved", "approval_rejected", "operator_roles_changed", "screening_list_imported", "secrets_rotated",
		"webhook_backlog_resent", "settlement_account_set"} {
		require.True(t, audit.Known(a), a)
	}
	require.Len(t, audit.Actions, 33)
	for _, a := range []audit.Action{"", "Fill", "delete", "cancel"} {
		require.False(t, audit.Known(a), a)
	}
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// The log on the real store: Record stamps an id and the time, and writes in the
// caller's unit of work (a rolled-back action leaves no row); List pages newest
// first with the operator's name, filters by operator, action and an inclusive
// window, and binds its cursor to the filter.
func TestRecordAndList(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			ops := operators.NewService(st, store.Now)
			ada, _, err := func() (x *operators.Operator, key string, err error) {
				err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
					x, key, err = ops.Create(ctx, tx, "Ada", operators.Roles)
					return err
				})
				return x, key, err
			}()
			require.NoError(t, err)
			bob, _, err := func() (x *operators.Operator, key string, err error) {
				err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
					x, key, err = ops.Create(ctx, tx, "Bob", operators.Roles)
					return err
				})
				return x, key, err
			}()
			require.NoError(t, err)

			t0 := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
			c := &clock{now: t0}
			log := audit.New(st, cursor.NewCodec([]byte("s")), c.Now)
			type rec struct {
				by     uuid.UUID
				action audit.Action
			}
			recs := []rec{{ada.ID, audit.PartnerCreated}, {bob.ID, audit.KeyCreated}, {ada.ID, audit.KeyRolled},
				{ada.ID, audit.KeyRevoked}, {bob.ID, audit.KeyRolled}}
			subjects := make([]uuid.UUID, len(recs))
			for i, r := range recs {
				c.Set(t0.Add(time.Duration(i) * time.Minute))
				subjects[i] = uuid.New()
				require.NoError(t, log.Record(ctx, st, actor.OfOperator(r.by, ""), audit.Entry{Action: r.action, SubjectID: &subjects[i], Reference: ptr("ref")}))
			}
			// An action whose unit of work rolls back leaves no row.
			c.Set(t0.Add(time.Hour))
			refused := errors.New("refused")
			require.ErrorIs(t, st.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
				if err := log.Record(ctx, tx, actor.OfOperator(ada.ID, "Ada"), audit.Entry{Action: audit.KeyRevoked}); err != nil {
					return err
				}
				return refused
			}), refused)

			all, err := log.List(ctx, audit.Filter{}, 0, "")
			require.NoError(t, err)
			require.Len(t, all.Items, len(recs), "the rolled-back action left no row")
			require.False(t, all.HasMore)
			for i, e := range all.Items {
				k := len(recs) - 1 - i // newest first
				require.Equal(t, recs[k].action, e.Action)
				require.Equal(t, recs[k].by, e.OperatorID)
				require.Equal(t, *e.SubjectID, subjects[k])
				require.True(t, e.CreatedAt.Equal(t0.Add(time.Duration(k)*time.Minute)), e.CreatedAt)
				require.NotEqual(t, uuid.Nil, e.ID)
				want := "Ada"
				if recs[k].by == bob.ID {
					want = "Bob"
				}
				require.Equal(t, want, e.OperatorName)
			}

			cases := []struct {
				name string
				f    audit.Filter
				want []int // indexes into recs, newest first
			}{
				{"by operator", audit.Filter{OperatorID: &bob.ID}, []int{4, 1}},
				{"by action", audit.Filter{Action: ptr(audit.KeyRolled)}, []int{4, 2}},
				{"operator and action", audit.Filter{OperatorID: &ada.ID, Action: ptr(audit.KeyRolled)}, []int{2}},
				{"inclusive window", audit.Filter{From: ptr(t0.Add(time.Minute)), To: ptr(t0.Add(3 * time.Minute))}, []int{3, 2, 1}},
				{"from only", audit.Filter{From: ptr(t0.Add(4 * time.Minute))}, []int{4}},
				{"no match", audit.Filter{TransactionID: ptr(uuid.New())}, nil},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p, err := log.List(ctx, tc.f, 0, "")
					require.NoError(t, err)
					var got []int
					for _, e := range p.Items {
						for i := range subjects {
							if *e.SubjectID == subjects[i] {
								got = append(got, i)
							}
						}
					}
					require.Equal(t, tc.want, got)
				})
			}

			// Pages of two: 4,3 | 2,1 | 0; each cursor works only with its filter.
			var got []uuid.UUID
			after := ""
			for pages := 0; ; pages++ {
				p, err := log.List(ctx, audit.Filter{}, 2, after)
				require.NoError(t, err)
				for _, e := range p.Items {
					got = append(got, *e.SubjectID)
				}
				if !p.HasMore {
					require.Equal(t, 2, pages)
					break
				}
				after = *p.NextCursor
				_, err = log.List(ctx, audit.Filter{OperatorID: &ada.ID}, 2, after)
				require.Equal(t, apperr.InvalidCursor, apperr.CodeOf(err))
			}
			require.Equal(t, []uuid.UUID{subjects[4], subjects[3], subjects[2], subjects[1], subjects[0]}, got)
		})
	}
}

type writes []*audit.Entry

func (w *writes) InsertAudit(_ context.Context, e *audit.Entry) error {
	*w = append(*w, e)
	return nil
}

// TestByUser: a change made for a partner's user (the dashboard's in-process
// calls) is recorded under them; the same change made with an API key is a
// server's and records nothing, as is one of an actor of no kind.
func TestByUser(t *testing.T) {
	t.Parallel()
	var w writes
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	ref := "https://example.com/hooks"
	ctx := context.Background()
	partner := uuid.New()
	require.NoError(t, audit.ByUser(ctx, &w, actor.OfPartnerKey(partner, "Shop"), at, audit.Entry{Action: audit.WebhookEndpointUpdated, Reference: &ref}))
	require.NoError(t, audit.ByUser(ctx, &w, actor.Actor{}, at, audit.Entry{Action: audit.WebhookEndpointUpdated, Reference: &ref}))
	require.Empty(t, w, "no user, no entry")
	user := uuid.New()
	require.NoError(t, audit.ByUser(ctx, &w, actor.OfPartnerUser(user, "ada@example.com"), at, audit.Entry{Action: audit.WebhookEndpointUpdated, Reference: &ref}))
	require.Len(t, w, 1)
	e := w[0]
	require.Equal(t, user, *e.PartnerUserID)
	require.Equal(t, audit.ByPartnerUser, e.Acting())
	require.Equal(t, at, e.CreatedAt)
	require.NotEqual(t, uuid.Nil, e.ID)
	require.Equal(t, ref, *e.Reference)
}
