package refunds_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func ptr[T any](v T) *T { return &v }

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func transfer(hash string, logIndex int, amount string) lifecycle.RefundTask {
	return lifecycle.RefundTask{Network: "bep20", TxHash: hash, LogIndex: logIndex, FromAddress: "0xfrom", ToAddress: "0xto",
		Amount: decimal.RequireFromString(amount), RawAmount: decimal.RequireFromString(amount).Shift(18).String(), BlockNumber: 7}
}

func requireCode(t *testing.T, err error, code apperr.Code, field string) {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "want %s, got %v", code, err)
	require.Equal(t, code, e.Code, e.Message)
	if field != "" {
		require.Equal(t, field, e.Details[0].Field)
	}
}

// Refund tasks on the real store: a transfer is recorded once per kind however
// often the watcher sees it; resolving needs the refund's hash or a note, happens
// once, and only on an open task (the unmatched view sees only unmatched
// deposits); a reorganised transfer's open record is forgotten, a resolved one kept;
// lists select by status and kind, newest first, with cursors bound to the view.
func TestRefundTasks(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			op, _, err := func() (x *operators.Operator, key string, err error) {
				err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
					x, key, err = operators.NewService(st, store.Now).Create(ctx, tx, "Ada", operators.Roles)
					return err
				})
				return x, key, err
			}()
			require.NoError(t, err)
			c := &clock{now: store.Now().Add(-time.Hour)}
			svc := refunds.NewService(st, cursor.NewCodec([]byte("s")), c.Now)

			first, err := svc.Record(ctx, st, transfer("0xaa", 0, "12.5"))
			require.NoError(t, err)
			require.Equal(t, lifecycle.TaskUnmatched, first.Kind, "the default kind")
			require.Equal(t, lifecycle.TaskOpen, first.Status)
			require.True(t, first.CreatedAt.Equal(c.Now()))
			c.Add(time.Minute)
			again := transfer("0xaa", 0, "99")
			again.Status = lifecycle.TaskRefunded // a caller's status is ignored
			dup, err := svc.Record(ctx, st, again)
			require.NoError(t, err)
			require.Equal(t, first.ID, dup.ID, "the same transfer is recorded once")
			require.Equal(t, "12.5", dup.Amount.String(), "the first record is unchanged")
			require.Equal(t, lifecycle.TaskOpen, dup.Status)

			c.Add(time.Minute)
			dustIn := transfer("0xaa", 0, "0.1")
			dustIn.Kind = lifecycle.TaskDust
			dust, err := svc.Record(ctx, st, dustIn)
			require.NoError(t, err)
			require.NotEqual(t, first.ID, dust.ID, "another kind of the same transfer is another task")
			c.Add(time.Minute)
			second, err := svc.Record(ctx, st, transfer("0xaa", 1, "3"))
			require.NoError(t, err, "another log of the same chain transaction")
			c.Add(time.Minute)
			third, err := svc.Record(ctx, st, transfer("0xbb", 0, "4"))
			require.NoError(t, err)

			bad := []struct {
				name   string
				action lifecycle.TaskStatus
				hash   *string
				note   *string
				field  string
			}{
				{"refund without its hash", lifecycle.TaskRefunded, nil, ptr("n"), "/tx_hash"},
				{"credit without a note", lifecycle.TaskCredited, ptr("0x1"), nil, "/note"},
				{"reopen", lifecycle.TaskOpen, ptr("0x1"), ptr("n"), "/action"},
				{"unknown action", "ignored", ptr("0x1"), ptr("n"), "/action"},
			}
			for _, b := range bad {
				_, err := svc.Resolve(ctx, st, first.ID, op.ID, b.action, b.hash, b.note)
				requireCode(t, err, apperr.InvalidRequest, b.field)
			}
			_, err = svc.Resolve(ctx, st, uuid.New(), op.ID, lifecycle.TaskCredited, nil, ptr("n"))
			requireCode(t, err, apperr.NotFound, "")
			_, err = svc.ResolveUnmatched(ctx, st, dust.ID, op.ID, lifecycle.TaskCredited, nil, ptr("n"))
			requireCode(t, err, apperr.NotFound, "")

			c.Add(time.Minute)
			refunded, err := svc.ResolveUnmatched(ctx, st, first.ID, op.ID, lifecycle.TaskRefunded, ptr("0xrefund"), nil)
			require.NoError(t, err)
			require.Equal(t, lifecycle.TaskRefunded, refunded.Status)
			require.Equal(t, "0xrefund", *refunded.ResolutionTxHash)
			require.Equal(t, op.ID, *refunded.ResolvedBy)
			require.True(t, refunded.ResolvedAt.Equal(c.Now()))
			_, err = svc.Resolve(ctx, st, first.ID, op.ID, lifecycle.TaskCredited, nil, ptr("again"))
			requireCode(t, err, apperr.InvalidStateTransition, "")
			credited, err := svc.Resolve(ctx, st, dust.ID, op.ID, lifecycle.TaskCredited, nil, ptr("kept as credit"))
			require.NoError(t, err, "Resolve closes a task of any kind")
			require.Equal(t, "kept as credit", *credited.ResolutionNote)

			// A reorganised transfer: the open record goes, the resolved one stays.
			require.NoError(t, svc.Forget(ctx, st, "bep20", "0xaa", 1))
			_, err = svc.Task(ctx, second.ID)
			requireCode(t, err, apperr.NotFound, "")
			require.NoError(t, svc.Forget(ctx, st, "bep20", "0xaa", 0))
			kept, err := svc.Task(ctx, first.ID)
			require.NoError(t, err)
			require.Equal(t, lifecycle.TaskRefunded, kept.Status)

			ids := func(p *refunds.Page) []uuid.UUID {
				var out []uuid.UUID
				for _, d := range p.Items {
					out = append(out, d.ID)
				}
				return out
			}
			views := []struct {
				status lifecycle.TaskStatus
				want   []uuid.UUID
			}{
				{lifecycle.TaskOpen, []uuid.UUID{third.ID}},
				{lifecycle.TaskRefunded, []uuid.UUID{first.ID}},
				{lifecycle.TaskCredited, nil}, // the credited task is dust, not an unmatched deposit
			}
			for _, v := range views {
				p, err := svc.List(ctx, v.status, 0, "")
				require.NoError(t, err)
				require.Equal(t, v.want, ids(p), v.status)
			}
			dk := lifecycle.TaskDust
			p, err := svc.Tasks(ctx, refunds.Filter{Kind: &dk}, 0, "")
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{dust.ID}, ids(p))
			p, err = svc.Tasks(ctx, refunds.Filter{}, 0, "")
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{dust.ID, first.ID}, ids(p), "every resolved task, newest created first")

			fourth, err := svc.Record(ctx, st, transfer("0xcc", 0, "5"))
			require.NoError(t, err)
			page, err := svc.List(ctx, lifecycle.TaskOpen, 1, "")
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{fourth.ID}, ids(page))
			require.True(t, page.HasMore)
			next, err := svc.List(ctx, lifecycle.TaskOpen, 1, *page.NextCursor)
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{third.ID}, ids(next))
			_, err = svc.List(ctx, lifecycle.TaskRefunded, 1, *page.NextCursor)
			requireCode(t, err, apperr.InvalidCursor, "")
			_, err = svc.Tasks(ctx, refunds.Filter{Open: true}, 1, *page.NextCursor)
			requireCode(t, err, apperr.InvalidCursor, "")
		})
	}
}
