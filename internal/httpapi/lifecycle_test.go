package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/apitest"
)

type sim = client.SimulateRequestEvent

const (
	evDetected  = client.SimulateRequestEventDepositDetected
	evConfirmed = client.SimulateRequestEventDepositConfirmed
	evCompleted = client.SimulateRequestEventTransactionCompleted
	evFailed    = client.SimulateRequestEventTransactionFailed
	evExpired   = client.SimulateRequestEventTransactionExpired
	evRefunded  = client.SimulateRequestEventTransactionRefunded
	evPayout    = client.SimulateRequestEventPayoutSettled
)

var allEvents = []sim{evDetected, evConfirmed, evCompleted, evFailed, evExpired, evRefunded, evPayout}

func simulate(t *testing.T, c *client.ClientWithResponses, id uuid.UUID, ev sim) *client.SimulateSandboxEventResponse {
	t.Helper()
	res, err := c.SimulateSandboxEventWithResponse(context.Background(), nil, client.SimulateRequest{Event: ev, TransactionId: id})
	require.NoError(t, err)
	return res
}

func mustSimulate(t *testing.T, c *client.ClientWithResponses, id uuid.UUID, ev sim) client.TransactionDetail {
	t.Helper()
	res := simulate(t, c, id, ev)
	require.Equal(t, http.StatusOK, res.StatusCode(), "%s: %s", ev, res.Body)
	return res.JSON200.Data
}

func history(t *testing.T, c *client.ClientWithResponses, id uuid.UUID) client.StatusHistory {
	t.Helper()
	return apitest.History(t, c, id)
}

func reasons(h client.StatusHistory) []string { return apitest.Reasons(h) }

func eventTypes(t *testing.T, env *apitest.Env, id uuid.UUID) []string {
	t.Helper()
	return env.EventTypes(t, id)
}

func TestHappyPath(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		tx := create(t, c, direct("HAPPY-1", "bep20", "2001.50"))

		res, err := c.SimulateSandboxEventWithResponse(ctx, nil, client.SimulateRequest{
			Event: evDetected, TransactionId: tx.Id, DepositId: ptr("dep_fixed_1"), BlockchainHash: ptr("0xabc"),
		})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		d := res.JSON200.Data
		require.Equal(t, client.TransactionStatusDepositConfirming, d.Status)
		require.Equal(t, "dep_fixed_1", *d.DepositId)
		require.Equal(t, "confirming", *d.DepositStatus)
		require.Equal(t, 1, *d.Confirmations)
		require.Equal(t, 15, *d.RequiredConfirmations, "bep20 needs 15")
		require.NotNil(t, d.ReceivedAt)
		require.Nil(t, d.ConfirmedAt)

		// A second detection of the same deposit changes nothing.
		again, err := c.SimulateSandboxEventWithResponse(ctx, nil, client.SimulateRequest{Event: evDetected, TransactionId: tx.Id, DepositId: ptr("dep_fixed_1")})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, again.StatusCode())
		require.Equal(t, d.UpdatedAt, again.JSON200.Data.UpdatedAt)

		d = mustSimulate(t, c, tx.Id, evConfirmed)
		require.Equal(t, client.TransactionStatusOrderFilled, d.Status)
		require.Equal(t, "confirmed", *d.DepositStatus)
		require.Equal(t, 15, *d.Confirmations)
		require.NotNil(t, d.ConfirmedAt)

		d = mustSimulate(t, c, tx.Id, evCompleted)
		require.Equal(t, client.TransactionStatusCompleted, d.Status)
		d = mustSimulate(t, c, tx.Id, evPayout)
		require.Equal(t, client.TransactionStatusCompleted, d.Status)

		h := history(t, c, tx.Id)
		require.Equal(t, client.TransactionStatusCompleted, h.Status)
		require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled", "order:settled", "payout:settled"}, reasons(h))
		require.Nil(t, h.History[0].FromStatus)
		require.Equal(t, "dep_fixed_1", (*h.History[1].Metadata)["deposit_id"])
		require.Equal(t, "0xabc", (*h.History[1].Metadata)["blockchain_hash"])
		for i := 1; i < len(h.History); i++ {
			require.Equal(t, h.History[i-1].ToStatus, *h.History[i].FromStatus, "the history is a chain")
			require.False(t, h.History[i].ChangedAt.Before(h.History[i-1].ChangedAt))
		}
		require.Equal(t, []string{"transaction.created", "deposit.detected", "deposit.confirmed", "transaction.completed", "payout.settled"}, eventTypes(t, env, tx.Id))

		// One revenue row: 2001.50 × 1 % = 20.015 → 20.02 (half-even), share 50 % = 10.01.
		rev, err := c.ListRevenueWithResponse(ctx, &client.ListRevenueParams{IncludeSummary: ptr(true)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rev.StatusCode(), string(rev.Body))
		require.Len(t, rev.JSON200.Data.Data, 1)
		row := rev.JSON200.Data.Data[0]
		require.Equal(t, tx.Id, row.TransactionId)
		require.Equal(t, "2001.50", row.Amount)
		require.Equal(t, tx.CryptoAmount, row.CryptoAmount)
		require.Equal(t, "20.02", row.PlatformFee)
		require.Equal(t, "10.01", row.Share)
		require.Equal(t, "10.01", rev.JSON200.Data.Summary.TotalPartnerShare)
		require.Equal(t, 1, rev.JSON200.Data.Summary.TransactionCount)
	})
}

// state drives a fresh transaction of c into the named state through the simulator.
func state(t *testing.T, c *client.ClientWithResponses, name client.TransactionStatus) uuid.UUID {
	t.Helper()
	id := create(t, c, direct("ST-"+uuid.NewString(), "trc20", "2000")).Id
	path := map[client.TransactionStatus][]sim{
		client.TransactionStatusAwaitingDeposit:   nil,
		client.TransactionStatusDepositConfirming: {evDetected},
		client.TransactionStatusOrderFilled:       {evDetected, evConfirmed},
		client.TransactionStatusCompleted:         {evDetected, evConfirmed, evCompleted},
		client.TransactionStatusFailed:            {evDetected, evFailed},
		client.TransactionStatusExpired:           {evExpired},
		client.TransactionStatusRefunded:          {evDetected, evFailed, evRefunded},
	}
	if name == client.TransactionStatusCancelled {
		res, err := c.CancelTransactionWithResponse(context.Background(), id, &client.CancelTransactionParams{}, idem())
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode())
		return id
	}
	for _, ev := range path[name] {
		mustSimulate(t, c, id, ev)
	}
	return id
}

func TestForbiddenTransitionsChangeNothing(t *testing.T) {
	t.Parallel()
	// For each state, the simulated events the table does not allow. (A repeated
	// deposit.detected on a transaction that has a deposit reuses it: 200, no change.)
	forbidden := map[client.TransactionStatus][]sim{
		client.TransactionStatusAwaitingDeposit:   {evConfirmed, evCompleted, evFailed, evRefunded, evPayout},
		client.TransactionStatusDepositConfirming: {evCompleted, evExpired, evRefunded, evPayout},
		client.TransactionStatusOrderFilled:       {evConfirmed, evExpired, evRefunded, evPayout},
		client.TransactionStatusCompleted:         {evConfirmed, evCompleted, evFailed, evExpired, evRefunded},
		client.TransactionStatusCancelled:         allEvents,
		client.TransactionStatusFailed:            {evConfirmed, evCompleted, evFailed, evExpired, evPayout},
		client.TransactionStatusExpired:           {evConfirmed, evCompleted, evFailed, evExpired, evRefunded, evPayout},
		client.TransactionStatusRefunded:          {evConfirmed, evCompleted, evFailed, evExpired, evRefunded, evPayout},
	}
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		for st, events := range forbidden {
			id := state(t, c, st)
			before := history(t, c, id)
			require.Equal(t, st, before.Status)
			evBefore := eventTypes(t, env, id)
			for _, ev := range events {
				res := simulate(t, c, id, ev)
				require.Equal(t, http.StatusConflict, res.StatusCode(), "%s then %s: %s", st, ev, res.Body)
				require.Equal(t, client.ErrorCodeInvalidStateTransition, res.JSON409.Error.Code)
			}
			if st != client.TransactionStatusAwaitingDeposit {
				res, err := c.CancelTransactionWithResponse(ctx, id, &client.CancelTransactionParams{}, idem())
				require.NoError(t, err)
				require.Equal(t, http.StatusConflict, res.StatusCode(), "cancel from %s", st)
				require.Equal(t, client.ErrorCodeInvalidStateTransition, res.JSON409.Error.Code)
			}
			after := history(t, c, id)
			require.Equal(t, before, after, "%s: nothing changed", st)
			require.Equal(t, evBefore, eventTypes(t, env, id), "%s: no event", st)
		}
		// A second payout settlement is refused too.
		done := state(t, c, client.TransactionStatusCompleted)
		mustSimulate(t, c, done, evPayout)
		require.Equal(t, http.StatusConflict, simulate(t, c, done, evPayout).StatusCode())
	})
}

func TestLateDepositAndRefund(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		id := state(t, c, client.TransactionStatusExpired)
		d := mustSimulate(t, c, id, evDetected)
		require.Equal(t, client.TransactionStatusDepositConfirming, d.Status, "a late deposit revives an expired transaction")
		require.Regexp(t, `^[0-9a-f]{64}$`, (*history(t, c, id).History[2].Metadata)["blockchain_hash"], "a Tron-shaped hash")
		d = mustSimulate(t, c, id, evFailed)
		require.Equal(t, client.TransactionStatusFailed, d.Status)
		require.Equal(t, "failed", *d.DepositStatus)
		d = mustSimulate(t, c, id, evRefunded)
		require.Equal(t, client.TransactionStatusRefunded, d.Status)
		require.Equal(t, "refunded", *d.DepositStatus)
		require.Equal(t, []string{"transaction:created", "system:expired", "deposit:detected", "deposit:failed", "deposit:refunded"}, reasons(history(t, c, id)))
		require.Equal(t, []string{"transaction.created", "transaction.expired", "deposit.detected", "transaction.failed", "transaction.refunded"}, eventTypes(t, env, id))

		filled := state(t, c, client.TransactionStatusOrderFilled)
		mustSimulate(t, c, filled, evFailed)
		require.Equal(t, "order:failed", reasons(history(t, c, filled))[4])
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		tx := create(t, c, direct("CXL-1", "bep20", "2000"))
		k := uuid.NewString()
		res, err := c.CancelTransactionWithResponse(ctx, tx.Id, &client.CancelTransactionParams{}, idemKey(k))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, client.TransactionStatusCancelled, res.JSON200.Data.Status)
		require.Equal(t, "Transaction cancelled.", *res.JSON200.Message)
		require.Equal(t, tx.DepositAddress, res.JSON200.Data.DepositAddress)

		replay, err := c.CancelTransactionWithResponse(ctx, tx.Id, &client.CancelTransactionParams{}, idemKey(k))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, replay.StatusCode())
		require.Equal(t, "true", replay.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, string(res.Body), string(replay.Body))

		// The same key on another transaction is another request.
		other := create(t, c, direct("CXL-2", "bep20", "2000"))
		reused, err := c.CancelTransactionWithResponse(ctx, other.Id, &client.CancelTransactionParams{}, idemKey(k))
		require.NoError(t, err)
		require.Equal(t, http.StatusUnprocessableEntity, reused.StatusCode())

		h := history(t, c, tx.Id)
		require.Equal(t, []string{"transaction:created", "partner:cancelled"}, reasons(h))
		require.Equal(t, []string{"transaction.created"}, eventTypes(t, env, tx.Id), "cancel emits no event")

		foreign, err := env.Client(t, env.NewPartner(t)).CancelTransactionWithResponse(ctx, other.Id, &client.CancelTransactionParams{}, idem())
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, foreign.StatusCode())
		require.Equal(t, http.StatusNotFound, simulateAs(t, env.Client(t, env.NewPartner(t)), other.Id))
		unknown, err := c.GetTransactionStatusHistoryWithResponse(ctx, uuid.New())
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, unknown.StatusCode())
	})
}

func simulateAs(t *testing.T, c *client.ClientWithResponses, id uuid.UUID) int {
	return simulate(t, c, id, evDetected).StatusCode()
}

func TestRevenueLedger(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		// Amounts whose shares add up exactly only in decimal: 0.10 + 0.20 style.
		amounts := []string{"2000.00", "2000.40", "3000.60", "2500.00", "1999.99", "4321.09", "1000.01"}
		networks := []string{"bep20", "trc20"}
		var ids []uuid.UUID
		for i, a := range amounts {
			tx := create(t, c, direct("REV-"+uuid.NewString(), networks[i%2], a))
			mustSimulate(t, c, tx.Id, evDetected)
			mustSimulate(t, c, tx.Id, evConfirmed)
			mustSimulate(t, c, tx.Id, evCompleted)
			ids = append(ids, tx.Id)
		}
		state(t, c, client.TransactionStatusOrderFilled) // not completed: not in the ledger

		walk := func(p client.ListRevenueParams) ([]client.RevenueRow, *client.RevenueSummary) {
			var rows []client.RevenueRow
			var sum *client.RevenueSummary
			for i := 0; i < 50; i++ {
				res, err := c.ListRevenueWithResponse(ctx, &p)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
				rows = append(rows, res.JSON200.Data.Data...)
				if s := res.JSON200.Data.Summary; s != nil {
					if sum != nil {
						require.Equal(t, *sum, *s, "the summary covers the window, not the page")
					}
					sum = s
				}
				if !res.JSON200.Data.HasMore {
					return rows, sum
				}
				p.Cursor = res.JSON200.Data.NextCursor
			}
			t.Fatal("walk did not end")
			return nil, nil
		}
		to := store.Now().Add(time.Minute)
		rows, sum := walk(client.ListRevenueParams{Limit: ptr(3), IncludeSummary: ptr(true), To: &to})
		require.Len(t, rows, len(amounts))
		// Each fee is 1 % half-even, each share half of it, summed exactly.
		// 20.00+20.00+30.01+25.00+20.00+43.21+10.00 = 168.22 → shares 10.00+10.00+15.00(15.005→15.00)+12.50+10.00+21.60(21.605→21.60)+5.00
		require.Equal(t, "84.10", sum.TotalPartnerShare)
		require.Equal(t, len(amounts), sum.TransactionCount)
		require.Equal(t, to.UTC().Truncate(time.Microsecond), sum.To.UTC())
		require.Equal(t, ids[len(ids)-1], rows[0].TransactionId, "newest first")

		bep, _ := walk(client.ListRevenueParams{Network: ptr("bep20"), Limit: ptr(2)})
		require.Len(t, bep, 4)
		none, s := walk(client.ListRevenueParams{CryptoCurrency: ptr("usdc"), IncludeSummary: ptr(true)})
		require.Empty(t, none)
		require.Equal(t, "0.00", s.TotalPartnerShare)
		require.Equal(t, 0, s.TransactionCount)

		// A window: from/to are inclusive.
		win, ws := walk(client.ListRevenueParams{From: &rows[4].Ts, To: &rows[1].Ts, IncludeSummary: ptr(true)})
		require.Len(t, win, 4)
		require.Equal(t, 4, ws.TransactionCount)

		// A cursor of one window is refused for another.
		first, err := c.ListRevenueWithResponse(ctx, &client.ListRevenueParams{Limit: ptr(2)})
		require.NoError(t, err)
		bad, err := c.ListRevenueWithResponse(ctx, &client.ListRevenueParams{Limit: ptr(2), Network: ptr("trc20"), Cursor: first.JSON200.Data.NextCursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode())
		require.Equal(t, client.ErrorCodeInvalidCursor, bad.JSON400.Error.Code)
	})
}

func TestRacingCancelAndDeposit(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"postgres"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel()
			env := apitest.Start(t, testdbPostgres(t), nil)
			c := env.Client(t, env.NewPartner(t))
			ctx := context.Background()
			const pairs = 50
			for i := range pairs {
				id := create(t, c, direct("RACE-"+uuid.NewString(), "bep20", "2000")).Id
				var wg sync.WaitGroup
				var cancelStatus, depositStatus int
				start := make(chan struct{})
				wg.Add(2)
				go func() {
					defer wg.Done()
					<-start
					res, err := c.CancelTransactionWithResponse(ctx, id, &client.CancelTransactionParams{}, idem())
					if err == nil {
						cancelStatus = res.StatusCode()
					}
				}()
				go func() {
					defer wg.Done()
					<-start
					res, err := c.SimulateSandboxEventWithResponse(ctx, nil, client.SimulateRequest{Event: evDetected, TransactionId: id})
					if err == nil {
						depositStatus = res.StatusCode()
					}
				}()
				close(start)
				wg.Wait()
				wins := 0
				for _, s := range []int{cancelStatus, depositStatus} {
					if s == http.StatusOK {
						wins++
					} else {
						require.Equal(t, http.StatusConflict, s, "pair %d", i)
					}
				}
				require.Equal(t, 1, wins, "pair %d: exactly one winner", i)
				h := history(t, c, id)
				require.Len(t, h.History, 2, "pair %d", i)
				require.Equal(t, h.Status, h.History[1].ToStatus, "the history matches the final state")
			}
		})
	}
}
