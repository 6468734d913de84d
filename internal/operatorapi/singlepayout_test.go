package operatorapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/payouts"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// payoutSettled returns the payout that transaction id's only payout.settled event
// carries, as the partner reads it.
func payoutSettled(t *testing.T, pc *client.ClientWithResponses, id uuid.UUID) *client.WebhookPayout {
	t.Helper()
	ctx := context.Background()
	typ := client.WebhookEventTypePayoutSettled
	evs, err := pc.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{TransactionId: &id, EventType: &typ})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, evs.StatusCode(), string(evs.Body))
	require.Len(t, evs.JSON200.Data.Data, 1, "one payout.settled event")
	ev, err := pc.GetWebhookEventWithResponse(ctx, evs.JSON200.Data.Data[0].EventId)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ev.StatusCode(), string(ev.Body))
	require.NotNil(t, ev.JSON200.Data.Payload.Payout, "payout.settled carries its payout")
	return ev.JSON200.Data.Payload.Payout
}

// A transaction paid out on its own is a payout of one: the partner's
// GET /payouts lists it (the operator's reference, the transaction's amount, one
// transaction) beside a batch, GET /payouts/{id} reads it with its transaction and
// the export has its row, all with exact amounts; its payout.settled event, the
// case file, the operators' list and the audit row name the same payout. A retry
// with the same Idempotency-Key replays the answer and records nothing twice, a
// second payout of the transaction is refused and adds none, and another partner
// sees none of it.
func TestSinglePayoutIsAPayoutOfOne(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		keyA := env.NewPartner(t)
		pa, pb := env.Client(t, keyA), env.Client(t, env.NewPartner(t))
		partnerA := env.PartnerID(t, keyA)
		ops := env.OperatorClient(t, env.NewOperator(t))
		batched, alone := completed(t, env, pa, ops, "5000.00"), completed(t, env, pa, ops, "22500.75")

		b, err := ops.CreatePayoutWithResponse(ctx, &oc.CreatePayoutParams{IdempotencyKey: key()},
			oc.PayoutRequest{PartnerId: partnerA, TransactionIds: []uuid.UUID{batched.Id}, Reference: "NIP-BATCH", FiatAmount: "5000.00"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, b.StatusCode(), string(b.Body))
		batch := b.JSON200.Data

		k, body := key(), oc.ReferenceRequest{Reference: "NIP-000013261128093000000001"}
		first, err := ops.SettlePayoutWithResponse(ctx, alone.Id, &oc.SettlePayoutParams{IdempotencyKey: k}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, first.StatusCode(), string(first.Body))
		replay, err := ops.SettlePayoutWithResponse(ctx, alone.Id, &oc.SettlePayoutParams{IdempotencyKey: k}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, replay.StatusCode(), string(replay.Body))
		require.Equal(t, "true", replay.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, first.Body, replay.Body, "byte for byte")
		again, err := ops.SettlePayoutWithResponse(ctx, alone.Id, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "NIP-AGAIN"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, again.StatusCode(), string(again.Body))

		// The partner's list: the payout of one, newest first, beside the batch, once.
		list, err := pa.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
		got := list.JSON200.Data.Data
		require.Len(t, got, 2, "the payout of one and the batch, nothing twice")
		require.Equal(t, batch.Id, got[1].Id)
		one := got[0]
		require.NotEqual(t, batch.Id, one.Id)
		require.Equal(t, body.Reference, one.Reference)
		require.Equal(t, "22500.75", one.Amount)
		require.Equal(t, 1, one.TransactionCount)

		// The payout with its one transaction.
		d, err := pa.GetPayoutWithResponse(ctx, one.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, d.StatusCode(), string(d.Body))
		require.Equal(t, body.Reference, d.JSON200.Data.Reference)
		require.Equal(t, "22500.75", d.JSON200.Data.Amount)
		require.Equal(t, []client.PayoutTransaction{{TransactionId: alone.Id, MerchantReference: alone.MerchantReference, Network: "bep20",
			CryptoCurrency: "usdt", CryptoAmount: alone.CryptoAmount, Amount: "22500.75"}}, d.JSON200.Data.Transactions)

		// The export: one row for it, one for the batch.
		exp, err := pa.ExportPayoutsWithResponse(ctx, &client.ExportPayoutsParams{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, exp.StatusCode(), string(exp.Body))
		require.Equal(t, [][]string{payouts.Columns,
			{one.Id.String(), body.Reference, "22500.75", one.CreatedAt.UTC().Format(time.RFC3339), alone.Id.String(), alone.MerchantReference, "bep20", "usdt", alone.CryptoAmount, "22500.75"},
			{batch.Id.String(), "NIP-BATCH", "5000.00", got[1].CreatedAt.UTC().Format(time.RFC3339), batched.Id.String(), batched.MerchantReference, "bep20", "usdt", batched.CryptoAmount, "5000.00"},
		}, readCSV(t, exp.Body))

		// The event, the case file, the operators' list and the audit row name it.
		payout := payoutSettled(t, pa, alone.Id)
		require.Equal(t, one.Id, *payout.PayoutId)
		require.Equal(t, body.Reference, *payout.Reference)
		require.Equal(t, "22500.75", payout.Amount)
		require.Equal(t, 1, countOf(reasons(partnerHistory(t, pa, alone.Id)), "payout:settled"))
		c, err := ops.GetOperatorTransactionWithResponse(ctx, alone.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, c.StatusCode(), string(c.Body))
		require.Equal(t, one.Id, *c.JSON200.Data.Payout.PayoutId)
		require.Equal(t, "22500.75", *c.JSON200.Data.Payout.PayoutFiatAmount)
		opList, err := ops.ListPayoutsWithResponse(ctx, &oc.ListPayoutsParams{PartnerId: &partnerA})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, opList.StatusCode(), string(opList.Body))
		require.Len(t, opList.JSON200.Data.Data, 2)
		require.Equal(t, []uuid.UUID{alone.Id}, opList.JSON200.Data.Data[0].TransactionIds)
		au, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{TransactionId: &alone.Id, Action: ptr(oc.AuditAction("payout"))})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, au.StatusCode(), string(au.Body))
		require.Len(t, au.JSON200.Data.Data, 1, "one audit row")
		require.Equal(t, one.Id, *au.JSON200.Data.Data[0].BatchId)

		// Another partner: nothing of A's.
		nf, err := pb.GetPayoutWithResponse(ctx, one.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nf.StatusCode())
		none, err := pb.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{})
		require.NoError(t, err)
		require.Empty(t, none.JSON200.Data.Data)
	})
}

func countOf(items []string, want string) int {
	n := 0
	for _, s := range items {
		if s == want {
			n++
		}
	}
	return n
}

// Payouts of one transaction racing, on its own and in batches, each with its own
// Idempotency-Key and operator: exactly one records it, every other is 409
// invalid_state_transition (never a 500 from the loser's payout or a deadlock
// between the two orders of work), and the partner sees one payout.
func TestConcurrentPayoutsOneWins(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		keyA := env.NewPartner(t)
		pa, partnerA := env.Client(t, keyA), env.PartnerID(t, keyA)
		ops := racers(t, env)
		for round := range 3 {
			tx := completed(t, env, pa, ops[0], "5000.00")
			counts := race(t, "payout", func(i int) (int, string, []byte) {
				op, ref := ops[i%len(ops)], fmt.Sprintf("NIP-%d-%d", round, i)
				if i%2 == 0 {
					res, err := op.SettlePayoutWithResponse(ctx, tx.Id, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: ref})
					require.NoError(t, err)
					return res.StatusCode(), codeOf(res.JSON409), res.Body
				}
				res, err := op.CreatePayoutWithResponse(ctx, &oc.CreatePayoutParams{IdempotencyKey: key()},
					oc.PayoutRequest{PartnerId: partnerA, TransactionIds: []uuid.UUID{tx.Id}, Reference: ref, FiatAmount: "5000.00"})
				require.NoError(t, err)
				return res.StatusCode(), codeOf(res.JSON409), res.Body
			})
			require.Equal(t, map[int]int{http.StatusOK: 1, http.StatusConflict: raceN - 1}, counts)
		}
		// Batches naming the same two transactions in opposite orders: they lock
		// them in one order, so they wait for each other instead of deadlocking.
		t1, t2 := completed(t, env, pa, ops[0], "5000.00"), completed(t, env, pa, ops[0], "5000.00")
		counts := race(t, "batch payout", func(i int) (int, string, []byte) {
			ids := []uuid.UUID{t1.Id, t2.Id}
			if i%2 == 1 {
				ids = []uuid.UUID{t2.Id, t1.Id}
			}
			res, err := ops[i%len(ops)].CreatePayoutWithResponse(ctx, &oc.CreatePayoutParams{IdempotencyKey: key()},
				oc.PayoutRequest{PartnerId: partnerA, TransactionIds: ids, Reference: fmt.Sprintf("NIP-both-%d", i), FiatAmount: "10000.00"})
			require.NoError(t, err)
			return res.StatusCode(), codeOf(res.JSON409), res.Body
		})
		require.Equal(t, map[int]int{http.StatusOK: 1, http.StatusConflict: raceN - 1}, counts, "batches in opposite orders")
		list, err := pa.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 4, "one payout per transaction, one for the pair")
	})
}
