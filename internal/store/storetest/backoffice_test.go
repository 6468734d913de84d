package storetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/apikeys"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/chain"
	"partnerd/internal/deposits"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/webhook"
)

// partnerAt creates a partner named name, created at at.
func partnerAt(t *testing.T, s *store.Store, name string, at time.Time) *partners.Partner {
	t.Helper()
	p := &partners.Partner{ID: uuid.New(), Name: name, Environment: partners.Sandbox, KeyHash: "hash-" + uuid.NewString(),
		FeeRate: dec("0.015"), ShareRate: dec("0.4"), CreatedAt: at}
	require.NoError(t, s.CreatePartner(context.Background(), p))
	return p
}

// TestAccountLists: Partners and Operators list every account, oldest first;
// OperatorByID finds one or answers NotFound.
func TestAccountLists(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		base := store.Now().Add(-time.Hour)

		none, err := s.Partners(ctx)
		require.NoError(t, err)
		require.Empty(t, none)
		// Created out of order: the list follows created_at, not insertion.
		p2 := partnerAt(t, s, "Second", base.Add(2*time.Minute))
		p1 := partnerAt(t, s, "First", base.Add(time.Minute))
		p3 := partnerAt(t, s, "Third", base.Add(3*time.Minute))
		ps, err := s.Partners(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 3)
		for i, want := range []*partners.Partner{p1, p2, p3} {
			require.Equal(t, want.ID, ps[i].ID, "partner %d, oldest first", i)
			require.Equal(t, want.Name, ps[i].Name)
			require.Equal(t, want.CreatedAt, ps[i].CreatedAt)
			require.True(t, want.FeeRate.Equal(ps[i].FeeRate))
			require.True(t, want.ShareRate.Equal(ps[i].ShareRate))
		}

		ops := make([]*operators.Operator, 3)
		for i, at := range []time.Duration{3, 1, 2} {
			ops[i] = &operators.Operator{ID: uuid.New(), Name: fmt.Sprintf("Operator %d", i), KeyHash: "hash-" + uuid.NewString(),
				CreatedAt: base.Add(at * time.Minute)}
			require.NoError(t, s.CreateOperator(ctx, ops[i]))
		}
		got, err := s.Operators(ctx)
		require.NoError(t, err)
		require.Len(t, got, 3)
		for i, want := range []*operators.Operator{ops[1], ops[2], ops[0]} {
			require.Equal(t, want.ID, got[i].ID, "operator %d, oldest first", i)
			require.Equal(t, want.Name, got[i].Name)
			require.Equal(t, want.CreatedAt, got[i].CreatedAt)
		}

		one, err := s.OperatorByID(ctx, ops[2].ID)
		require.NoError(t, err)
		require.Equal(t, ops[2].ID, one.ID)
		require.Equal(t, ops[2].Name, one.Name)
		require.Equal(t, ops[2].CreatedAt, one.CreatedAt)
		_, err = s.OperatorByID(ctx, uuid.New())
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		_, err = s.OperatorByID(ctx, p1.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "a partner's id is no operator's")
	})
}

// TestAPIKeys: keys are stored, listed per owner newest first, found per owner, and
// their revocation and expiry are written and honoured by authentication.
func TestAPIKeys(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		base := store.Now().Add(-time.Hour)
		p := partnerAt(t, s, "Keys", base)
		other := partnerAt(t, s, "Other", base)
		o := newOperator(t, s)

		second := &apikeys.Key{ID: uuid.New(), Owner: apikeys.Partner, OwnerID: p.ID, Hash: "hash-second-" + uuid.NewString(), Prefix: "pk_sb_2",
			CreatedAt: base.Add(2 * time.Minute), ExpiresAt: ptr(base.Add(48 * time.Hour))}
		first := &apikeys.Key{ID: uuid.New(), Owner: apikeys.Partner, OwnerID: p.ID, Hash: "hash-first-" + uuid.NewString(), Prefix: "pk_sb_1",
			CreatedAt: base.Add(time.Minute)}
		require.NoError(t, s.InsertAPIKey(ctx, second))
		require.NoError(t, s.InsertAPIKey(ctx, first))
		dup := *first
		dup.ID = uuid.New()
		require.Error(t, s.InsertAPIKey(ctx, &dup), "a key hash is unique")

		keys, err := s.APIKeys(ctx, apikeys.Partner, p.ID)
		require.NoError(t, err)
		require.Len(t, keys, 3, "the two keys and the account's own")
		require.Equal(t, []uuid.UUID{second.ID, first.ID, p.ID}, []uuid.UUID{keys[0].ID, keys[1].ID, keys[2].ID}, "newest first")
		require.Equal(t, second.Hash, keys[0].Hash)
		require.Equal(t, "pk_sb_2", keys[0].Prefix)
		require.Equal(t, second.CreatedAt, keys[0].CreatedAt)
		require.Equal(t, *second.ExpiresAt, *keys[0].ExpiresAt)
		require.Nil(t, keys[0].RevokedAt)
		require.Nil(t, keys[1].ExpiresAt)

		otherKeys, err := s.APIKeys(ctx, apikeys.Partner, other.ID)
		require.NoError(t, err)
		require.Len(t, otherKeys, 1)
		require.Equal(t, other.ID, otherKeys[0].ID)
		opKeys, err := s.APIKeys(ctx, apikeys.Operator, p.ID)
		require.NoError(t, err)
		require.Empty(t, opKeys, "keys are per owner kind")
		opKeys, err = s.APIKeys(ctx, apikeys.Operator, o.ID)
		require.NoError(t, err)
		require.Len(t, opKeys, 1)

		k, err := s.APIKey(ctx, apikeys.Partner, p.ID, first.ID)
		require.NoError(t, err)
		require.Equal(t, first.Hash, k.Hash)
		require.Equal(t, apikeys.Partner, k.Owner)
		require.Equal(t, p.ID, k.OwnerID)
		_, err = s.APIKey(ctx, apikeys.Partner, other.ID, first.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "another owner's key")
		_, err = s.APIKey(ctx, apikeys.Operator, p.ID, first.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "another owner kind")
		_, err = s.APIKey(ctx, apikeys.Partner, p.ID, uuid.New())
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

		// Both keys authenticate until revoked or expired.
		_, err = s.PartnerByKeyHash(ctx, first.Hash)
		require.NoError(t, err)
		got, err := s.PartnerByKeyHash(ctx, second.Hash)
		require.NoError(t, err)
		require.Equal(t, *second.ExpiresAt, *got.KeyExpiresAt)

		revokedAt := store.Now()
		k.RevokedAt = &revokedAt
		require.NoError(t, s.UpdateAPIKey(ctx, k))
		k, err = s.APIKey(ctx, apikeys.Partner, p.ID, first.ID)
		require.NoError(t, err)
		require.Equal(t, revokedAt, *k.RevokedAt)
		_, err = s.PartnerByKeyHash(ctx, first.Hash)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "a revoked key is not valid")

		expired := keys[0]
		expired.ExpiresAt = ptr(store.Now().Add(-time.Second))
		require.NoError(t, s.UpdateAPIKey(ctx, expired))
		k, err = s.APIKey(ctx, apikeys.Partner, p.ID, second.ID)
		require.NoError(t, err)
		require.Equal(t, *expired.ExpiresAt, *k.ExpiresAt)
		require.Nil(t, k.RevokedAt)
		_, err = s.PartnerByKeyHash(ctx, second.Hash)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "an expired key is not valid")

		// Clearing the expiry makes it valid again; the account's own key is untouched.
		expired.ExpiresAt = nil
		require.NoError(t, s.UpdateAPIKey(ctx, expired))
		_, err = s.PartnerByKeyHash(ctx, second.Hash)
		require.NoError(t, err)
		_, err = s.PartnerByKeyHash(ctx, p.KeyHash)
		require.NoError(t, err)

		// An operator's key revoked stops authenticating the operator.
		ok := opKeys[0]
		ok.RevokedAt = ptr(store.Now())
		require.NoError(t, s.UpdateAPIKey(ctx, ok))
		_, err = s.OperatorByKeyHash(ctx, o.KeyHash)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
	})
}

// TestBatches: a batch is written with its items in order, found by any of its
// transactions per kind, and listed per kind and partner, newest first, by pages.
func TestBatches(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		o := newOperator(t, s)
		pa, pb := newPartner(t, s), newPartner(t, s)
		base := store.Now().Add(-time.Hour)
		var txs []*lifecycle.Transaction
		for range 4 {
			txs = append(txs, newTransaction(t, s, pa, txOpts{status: lifecycle.Completed}))
		}
		tb := newTransaction(t, s, pb, txOpts{status: lifecycle.Completed})

		insert := func(b *batches.Batch) {
			t.Helper()
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.InsertBatch(ctx, b) }))
		}
		rate := dec("1542.25")
		fill := &batches.Batch{ID: uuid.New(), Kind: batches.Fill, Reference: "FILL-1", Rate: &rate, FiatAmount: dec("308450.74"),
			CryptoAmount: dec("200.000002"), TransactionIDs: []uuid.UUID{txs[1].ID, txs[0].ID}, OperatorID: o.ID, CreatedAt: base}
		insert(fill)
		payouts := make([]*batches.Batch, 3)
		for i, ids := range [][]uuid.UUID{{txs[0].ID}, {txs[2].ID, txs[3].ID, txs[1].ID}} {
			payouts[i] = &batches.Batch{ID: uuid.New(), Kind: batches.Payout, PartnerID: &pa.ID, Reference: fmt.Sprintf("PAY-A%d", i),
				FiatAmount: dec("123.45"), CryptoAmount: dec("0.000001"), TransactionIDs: ids, OperatorID: o.ID, CreatedAt: base.Add(time.Duration(i+1) * time.Minute)}
			insert(payouts[i])
		}
		payouts[2] = &batches.Batch{ID: uuid.New(), Kind: batches.Payout, PartnerID: &pb.ID, Reference: "PAY-B",
			FiatAmount: dec("1"), CryptoAmount: dec("1"), TransactionIDs: []uuid.UUID{tb.ID}, OperatorID: o.ID, CreatedAt: base.Add(3 * time.Minute)}
		insert(payouts[2])

		// BatchOf, per kind.
		got, err := s.BatchOf(ctx, batches.Fill, txs[0].ID)
		require.NoError(t, err)
		require.NotNil(t, got)
		require.Equal(t, fill.ID, got.ID)
		require.Equal(t, batches.Fill, got.Kind)
		require.Nil(t, got.PartnerID)
		require.Equal(t, "FILL-1", got.Reference)
		require.True(t, rate.Equal(*got.Rate))
		require.True(t, fill.FiatAmount.Equal(got.FiatAmount))
		require.True(t, fill.CryptoAmount.Equal(got.CryptoAmount))
		require.Equal(t, []uuid.UUID{txs[1].ID, txs[0].ID}, got.TransactionIDs, "items in their order")
		require.Equal(t, o.ID, got.OperatorID)
		require.Equal(t, base, got.CreatedAt)
		got, err = s.BatchOf(ctx, batches.Payout, txs[1].ID)
		require.NoError(t, err)
		require.Equal(t, payouts[1].ID, got.ID)
		require.Equal(t, pa.ID, *got.PartnerID)
		require.Nil(t, got.Rate)
		require.Equal(t, []uuid.UUID{txs[2].ID, txs[3].ID, txs[1].ID}, got.TransactionIDs)
		got, err = s.BatchOf(ctx, batches.Fill, txs[2].ID)
		require.NoError(t, err)
		require.Nil(t, got, "in no fill batch")
		got, err = s.BatchOf(ctx, batches.Payout, uuid.New())
		require.NoError(t, err)
		require.Nil(t, got)

		// BatchTransactions: the partner's transactions of each batch, in its order,
		// in one read; another partner's batch and transactions are left out.
		paid, err := s.BatchTransactions(ctx, pa.ID, []uuid.UUID{payouts[1].ID, payouts[0].ID, payouts[2].ID})
		require.NoError(t, err)
		require.Len(t, paid, 2, "partner B's payout left out")
		txIDs := func(ts []*lifecycle.Transaction) []uuid.UUID {
			out := make([]uuid.UUID, len(ts))
			for i, tr := range ts {
				out[i] = tr.ID
			}
			return out
		}
		require.Equal(t, []uuid.UUID{txs[2].ID, txs[3].ID, txs[1].ID}, txIDs(paid[payouts[1].ID]), "in the batch's order")
		require.Equal(t, []uuid.UUID{txs[0].ID}, txIDs(paid[payouts[0].ID]))
		first := paid[payouts[1].ID][0]
		require.Equal(t, txs[2].MerchantReference, first.MerchantReference)
		require.Equal(t, txs[2].Network, first.Network)
		require.True(t, txs[2].CryptoAmount.Equal(first.CryptoAmount))
		require.True(t, txs[2].FiatAmount.Equal(first.FiatAmount))
		require.Equal(t, lifecycle.Completed, first.Status)
		none, err := s.BatchTransactions(ctx, pa.ID, nil)
		require.NoError(t, err)
		require.Empty(t, none)

		// ListBatches: per kind, newest first.
		all, err := s.ListBatches(ctx, batches.Query{Kind: batches.Payout, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{payouts[2].ID, payouts[1].ID, payouts[0].ID}, batchIDs(all))
		require.Equal(t, []uuid.UUID{tb.ID}, all[0].TransactionIDs)
		require.Equal(t, []uuid.UUID{txs[2].ID, txs[3].ID, txs[1].ID}, all[1].TransactionIDs)
		// CountOnly: the same batches, their transactions counted, no ids read.
		counted, err := s.ListBatches(ctx, batches.Query{Kind: batches.Payout, Limit: 10, CountOnly: true})
		require.NoError(t, err)
		require.Equal(t, batchIDs(all), batchIDs(counted))
		for i, b := range counted {
			require.Nil(t, b.TransactionIDs)
			require.Equal(t, len(all[i].TransactionIDs), b.TransactionCount)
			require.Equal(t, all[i].Size(), b.Size())
			require.Equal(t, all[i].Reference, b.Reference)
			require.True(t, all[i].FiatAmount.Equal(b.FiatAmount))
		}
		require.Equal(t, 3, counted[1].Size())
		fills, err := s.ListBatches(ctx, batches.Query{Kind: batches.Fill, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{fill.ID}, batchIDs(fills))
		require.Equal(t, []uuid.UUID{txs[1].ID, txs[0].ID}, fills[0].TransactionIDs)

		// Per partner, by pages of one.
		ofA, err := s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &pa.ID, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{payouts[1].ID}, batchIDs(ofA))
		pos := &cursor.Position{Time: ofA[0].CreatedAt, ID: ofA[0].ID.String()}
		ofA, err = s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &pa.ID, After: pos, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{payouts[0].ID}, batchIDs(ofA))
		pos = &cursor.Position{Time: ofA[0].CreatedAt, ID: ofA[0].ID.String()}
		ofA, err = s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &pa.ID, After: pos, Limit: 1})
		require.NoError(t, err)
		require.Empty(t, ofA)
		ofB, err := s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &pb.ID, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{payouts[2].ID}, batchIDs(ofB))
		_, err = s.ListBatches(ctx, batches.Query{Kind: batches.Payout, After: &cursor.Position{Time: base, ID: "bad"}, Limit: 10})
		require.Equal(t, apperr.InvalidCursor, apperr.CodeOf(err))

		// Within a window, both ends inclusive.
		from, to := payouts[0].CreatedAt, payouts[1].CreatedAt
		inside, err := s.ListBatches(ctx, batches.Query{Kind: batches.Payout, From: &from, To: &to, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{payouts[1].ID, payouts[0].ID}, batchIDs(inside))
		after := payouts[0].CreatedAt.Add(time.Second)
		inside, err = s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &pa.ID, From: &after, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{payouts[1].ID}, batchIDs(inside))
		inside, err = s.ListBatches(ctx, batches.Query{Kind: batches.Payout, To: &from, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{payouts[0].ID}, batchIDs(inside))

		// PartnerBalance: a window [from, to) holding partner A's second payout
		// only (to exclusive); what A is owed is its awaiting-payout stage.
		bal, err := s.PartnerBalance(ctx, pa.ID, after, payouts[1].CreatedAt.Add(time.Microsecond))
		require.NoError(t, err)
		require.Equal(t, 1, bal.Payouts)
		require.True(t, payouts[1].FiatAmount.Equal(bal.PaidOut.Amount), "%s", bal.PaidOut.Amount)
		require.Equal(t, len(payouts[1].TransactionIDs), bal.PaidOut.Transactions)
		empty, err := s.PartnerBalance(ctx, pa.ID, after, payouts[1].CreatedAt)
		require.NoError(t, err)
		require.Zero(t, empty.Payouts, "the end is exclusive")
		require.True(t, empty.PaidOut.Amount.IsZero())
		due, err := s.ListStage(ctx, backoffice.StageQuery{StageFilter: backoffice.StageFilter{Stage: backoffice.AwaitingPayout, PartnerID: &pa.ID}, Limit: 100})
		require.NoError(t, err)
		owed := decimal.Zero
		for _, tr := range due {
			owed = owed.Add(tr.FiatAmount)
		}
		require.Equal(t, len(due), bal.Owed.Transactions)
		require.True(t, owed.Equal(bal.Owed.Amount), "owed %s, stage sums %s", bal.Owed.Amount, owed)
		require.True(t, bal.InPayout.Amount.IsZero())

		// Batch, by id, of any kind.
		one, err := s.Batch(ctx, payouts[1].ID)
		require.NoError(t, err)
		require.Equal(t, payouts[1].Reference, one.Reference)
		require.Equal(t, batches.Payout, one.Kind)
		require.Equal(t, pa.ID, *one.PartnerID)
		require.True(t, payouts[1].FiatAmount.Equal(one.FiatAmount))
		require.Equal(t, payouts[1].TransactionIDs, one.TransactionIDs)
		one, err = s.Batch(ctx, fill.ID)
		require.NoError(t, err)
		require.Equal(t, batches.Fill, one.Kind)
		_, err = s.Batch(ctx, uuid.New())
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

		// Batches of equal time are ordered by id, descending, and paged without loss.
		twins := []*batches.Batch{
			{ID: uuid.New(), Kind: batches.Fill, Reference: "T1", FiatAmount: dec("1"), CryptoAmount: dec("1"), TransactionIDs: []uuid.UUID{txs[2].ID}, OperatorID: o.ID, CreatedAt: base.Add(time.Hour)},
			{ID: uuid.New(), Kind: batches.Fill, Reference: "T2", FiatAmount: dec("1"), CryptoAmount: dec("1"), TransactionIDs: []uuid.UUID{txs[3].ID}, OperatorID: o.ID, CreatedAt: base.Add(time.Hour)},
		}
		for _, b := range twins {
			insert(b)
		}
		var seen []uuid.UUID
		pos = nil
		for {
			page, err := s.ListBatches(ctx, batches.Query{Kind: batches.Fill, After: pos, Limit: 1})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			seen = append(seen, page[0].ID)
			pos = &cursor.Position{Time: page[0].CreatedAt, ID: page[0].ID.String()}
		}
		hi, lo := twins[0].ID, twins[1].ID
		if hi.String() < lo.String() {
			hi, lo = lo, hi
		}
		require.Equal(t, []uuid.UUID{hi, lo, fill.ID}, seen)
	})
}

func batchIDs(bs []*batches.Batch) []uuid.UUID {
	out := make([]uuid.UUID, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}

// TestAuditLog: entries are written and listed newest first with their operator's
// name, filtered and paged.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		o1 := &operators.Operator{ID: uuid.New(), Name: "Ada", KeyHash: "hash-" + uuid.NewString(), CreatedAt: store.Now()}
		o2 := &operators.Operator{ID: uuid.New(), Name: "Bola", KeyHash: "hash-" + uuid.NewString(), CreatedAt: store.Now()}
		require.NoError(t, s.CreateOperator(ctx, o1))
		require.NoError(t, s.CreateOperator(ctx, o2))
		p := newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{status: lifecycle.Completed})
		base := store.Now().Add(-time.Hour)

		entries := []*audit.Entry{
			{ID: uuid.New(), OperatorID: o1.ID, Action: audit.Fill, TransactionID: &tr.ID, Reference: ptr("FILL-1"), CreatedAt: base},
			{ID: uuid.New(), OperatorID: o2.ID, Action: audit.Settle, TransactionID: &tr.ID, CreatedAt: base.Add(time.Minute)},
			{ID: uuid.New(), OperatorID: o1.ID, Action: audit.Payout, SubjectID: &p.ID, CreatedAt: base.Add(2 * time.Minute)},
			{ID: uuid.New(), OperatorID: o1.ID, Action: audit.Fail, TransactionID: &tr.ID, CreatedAt: base.Add(3 * time.Minute)},
		}
		for _, e := range entries {
			require.NoError(t, s.InsertAudit(ctx, e))
		}
		// Written within a unit of work, it is rolled back with it.
		rolled := &audit.Entry{ID: uuid.New(), OperatorID: o2.ID, Action: audit.Refund, CreatedAt: base.Add(4 * time.Minute)}
		err := s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.InsertAudit(ctx, rolled); err != nil {
				return err
			}
			return fmt.Errorf("abandon")
		})
		require.EqualError(t, err, "abandon")

		list, err := s.ListAudit(ctx, audit.Filter{}, nil, 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{entries[3].ID, entries[2].ID, entries[1].ID, entries[0].ID}, auditIDs(list), "newest first, the rolled back one absent")
		last := list[3]
		require.Equal(t, "Ada", last.OperatorName)
		require.Equal(t, o1.ID, last.OperatorID)
		require.Equal(t, audit.Fill, last.Action)
		require.Equal(t, tr.ID, *last.TransactionID)
		require.Equal(t, "FILL-1", *last.Reference)
		require.Nil(t, last.SubjectID)
		require.Nil(t, last.BatchID)
		require.Nil(t, last.UnmatchedDepositID)
		require.Equal(t, base, last.CreatedAt)
		require.Equal(t, "Bola", list[2].OperatorName)
		require.Equal(t, p.ID, *list[1].SubjectID)
		require.Nil(t, list[1].TransactionID)

		byOp, err := s.ListAudit(ctx, audit.Filter{OperatorID: &o1.ID}, nil, 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{entries[3].ID, entries[2].ID, entries[0].ID}, auditIDs(byOp))
		byTx, err := s.ListAudit(ctx, audit.Filter{TransactionID: &tr.ID}, nil, 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{entries[3].ID, entries[1].ID, entries[0].ID}, auditIDs(byTx))
		settle := audit.Settle
		byAction, err := s.ListAudit(ctx, audit.Filter{Action: &settle}, nil, 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{entries[1].ID}, auditIDs(byAction))
		from, to := base.Add(time.Minute), base.Add(2*time.Minute)
		window, err := s.ListAudit(ctx, audit.Filter{From: &from, To: &to}, nil, 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{entries[2].ID, entries[1].ID}, auditIDs(window), "both bounds inclusive")
		combined, err := s.ListAudit(ctx, audit.Filter{OperatorID: &o1.ID, TransactionID: &tr.ID, From: &from}, nil, 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{entries[3].ID}, auditIDs(combined))
		nobody := uuid.New()
		empty, err := s.ListAudit(ctx, audit.Filter{OperatorID: &nobody}, nil, 10)
		require.NoError(t, err)
		require.Empty(t, empty)

		// Pages of two, following the last entry of each.
		page, err := s.ListAudit(ctx, audit.Filter{}, nil, 2)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{entries[3].ID, entries[2].ID}, auditIDs(page))
		pos := &cursor.Position{Time: page[1].CreatedAt, ID: page[1].ID.String()}
		page, err = s.ListAudit(ctx, audit.Filter{}, pos, 2)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{entries[1].ID, entries[0].ID}, auditIDs(page))
		pos = &cursor.Position{Time: page[1].CreatedAt, ID: page[1].ID.String()}
		page, err = s.ListAudit(ctx, audit.Filter{}, pos, 2)
		require.NoError(t, err)
		require.Empty(t, page)
		_, err = s.ListAudit(ctx, audit.Filter{}, &cursor.Position{Time: base, ID: "bad"}, 2)
		require.Equal(t, apperr.InvalidCursor, apperr.CodeOf(err))
	})
}

// TestAuditLogCommandLine: a change no operator made (the command line's) is
// stored without an operator and listed, as the command line's, beside an
// operator's; filtering by operator leaves it out.
func TestAuditLogCommandLine(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		o := &operators.Operator{ID: uuid.New(), Name: "Ada", KeyHash: "hash-" + uuid.NewString(), CreatedAt: store.Now()}
		require.NoError(t, s.CreateOperator(ctx, o))
		p := newPartner(t, s)
		base := store.Now().Add(-time.Hour)
		byCLI := &audit.Entry{ID: uuid.New(), OperatorID: audit.CLI, Action: audit.KeyRolled, SubjectID: &p.ID, Reference: ptr("sk_sandbox_"), CreatedAt: base}
		byOp := &audit.Entry{ID: uuid.New(), OperatorID: o.ID, Action: audit.KeyRevoked, SubjectID: &p.ID, CreatedAt: base.Add(time.Minute)}
		require.NoError(t, s.InsertAudit(ctx, byCLI))
		require.NoError(t, s.InsertAudit(ctx, byOp))

		list, err := s.ListAudit(ctx, audit.Filter{}, nil, 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{byOp.ID, byCLI.ID}, auditIDs(list))
		require.Equal(t, audit.ByOperator, list[0].Actor)
		require.Equal(t, "Ada", list[0].Who())
		require.Equal(t, audit.ByCLI, list[1].Actor)
		require.Equal(t, audit.CLI, list[1].OperatorID)
		require.Equal(t, "cli", list[1].Who())
		require.Equal(t, audit.KeyRolled, list[1].Action)

		mine, err := s.ListAudit(ctx, audit.Filter{OperatorID: &o.ID}, nil, 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{byOp.ID}, auditIDs(mine))
	})
}

func auditIDs(es []*audit.Entry) []uuid.UUID {
	out := make([]uuid.UUID, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// TestDepositTransfersAndScannedBlocks: a transaction's chain transfers, oldest
// first, and each network's last scanned block (the cursor, as ChainProgress
// reads it).
func TestDepositTransfersAndScannedBlocks(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{status: lifecycle.DepositConfirming})
		other := newTransaction(t, s, p, txOpts{})
		base := store.Now().Add(-time.Hour)

		none, err := s.DepositTransfers(ctx, tr.ID)
		require.NoError(t, err)
		require.Empty(t, none)

		transfer := func(hash string, logIndex uint, block uint64, amount string, id *uuid.UUID, at time.Time, state string) {
			t.Helper()
			require.NoError(t, s.SaveChainTransfer(ctx, &deposits.ChainTransfer{Network: "bep20", TxHash: hash, LogIndex: logIndex, Token: "usdt",
				Block: block, BlockHash: fmt.Sprintf("0xb%d", block), BlockTime: at, From: "0xfrom-" + hash, To: tr.DepositAddress,
				Raw: dec(amount).Shift(18), Amount: dec(amount), TransactionID: id, DepositID: hash, State: state, CreatedAt: at}))
		}
		transfer("0xlate", 1, 105, "40", &tr.ID, base.Add(2*time.Minute), deposits.TransferPending)
		transfer("0xearly", 0, 101, "60.000001", &tr.ID, base.Add(time.Minute), deposits.TransferConfirmed)
		transfer("0xsame-b", 2, 103, "1", &tr.ID, base.Add(3*time.Minute), deposits.TransferReorged)
		transfer("0xsame-a", 7, 102, "2", &tr.ID, base.Add(3*time.Minute), deposits.TransferPending)
		transfer("0xothers", 0, 100, "9", &other.ID, base, deposits.TransferPending)
		transfer("0xstray", 0, 100, "9", nil, base, deposits.TransferUnmatched)

		got, err := s.DepositTransfers(ctx, tr.ID)
		require.NoError(t, err)
		require.Len(t, got, 4)
		var hashes []string
		for _, d := range got {
			hashes = append(hashes, d.TxHash)
		}
		require.Equal(t, []string{"0xearly", "0xlate", "0xsame-a", "0xsame-b"}, hashes, "oldest first, then by block")
		first := got[0]
		require.Equal(t, 0, *first.LogIndex)
		require.Equal(t, "0xfrom-0xearly", *first.FromAddress)
		require.True(t, dec("60.000001").Equal(first.Amount))
		require.EqualValues(t, 101, *first.BlockNumber)
		require.Equal(t, deposits.TransferConfirmed, first.State)
		require.Equal(t, base.Add(time.Minute), first.SeenAt)
		require.Equal(t, 7, *got[2].LogIndex)
		require.Equal(t, deposits.TransferReorged, got[3].State)
		others, err := s.DepositTransfers(ctx, other.ID)
		require.NoError(t, err)
		require.Len(t, others, 1)
		require.Equal(t, "0xothers", others[0].TxHash)
		unknown, err := s.DepositTransfers(ctx, uuid.New())
		require.NoError(t, err)
		require.Empty(t, unknown)

		blocks, err := scannedBlocks(ctx, s)
		require.NoError(t, err)
		require.Empty(t, blocks, "no network scanned yet")
		bep := chain.Cursor{Block: 120, Hash: common.BigToHash(common.Big1)}
		ok, err := s.MoveChainCursor(ctx, "bep20", nil, bep)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.MoveChainCursor(ctx, "trc20", nil, chain.Cursor{Block: 7000, Hash: common.BigToHash(common.Big2)})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.MoveChainCursor(ctx, "bep20", &bep, chain.Cursor{Block: 121, Hash: common.BigToHash(common.Big3)})
		require.NoError(t, err)
		require.True(t, ok)
		blocks, err = scannedBlocks(ctx, s)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"bep20": 121, "trc20": 7000}, blocks)
	})
}

// scannedBlocks is each network's scanned block as the overview reads it.
func scannedBlocks(ctx context.Context, s *store.Store) (map[string]int64, error) {
	progress, err := s.ChainProgress(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for n, p := range progress {
		if p.Scanned != nil {
			out[n] = *p.Scanned
		}
	}
	return out, nil
}

// TestOpenRefundTasksByKind counts the open refund tasks of each kind, only.
func TestOpenRefundTasksByKind(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		n, err := s.OpenRefundTasksByKind(ctx)
		require.NoError(t, err)
		require.Empty(t, n)
		o := newOperator(t, s)
		p := newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{status: lifecycle.DepositConfirming})
		now := store.Now()
		var ids []uuid.UUID
		for i := range 3 {
			d, err := s.InsertUnmatchedDeposit(ctx, unmatchedDeposit(i, now))
			require.NoError(t, err)
			ids = append(ids, d.ID)
		}
		for i, k := range []lifecycle.TaskKind{lifecycle.TaskExcess, lifecycle.TaskDust, lifecycle.TaskDust} {
			d := unmatchedDeposit(3+i, now)
			d.Kind, d.TransactionID, d.PartnerID = k, &tr.ID, &p.ID
			_, err = s.InsertUnmatchedDeposit(ctx, d)
			require.NoError(t, err)
		}
		_, err = s.InsertUnmatchedDeposit(ctx, unmatchedDeposit(0, now)) // recorded already
		require.NoError(t, err)
		n, err = s.OpenRefundTasksByKind(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int{"unmatched": 3, "excess": 1, "dust": 2}, n)

		resolved, err := s.ResolveUnmatchedDeposit(ctx, ids[1], resolution(o.ID))
		require.NoError(t, err)
		require.True(t, resolved)
		n, err = s.OpenRefundTasksByKind(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int{"unmatched": 2, "excess": 1, "dust": 2}, n, "a resolved task is not open")
	})
}

// TestFailingWebhooks lists the partners whose enabled endpoint has failed events
// or events retrying after a failed attempt, by partner name, with their counts.
func TestFailingWebhooks(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		now := store.Now()
		zed := partnerAt(t, s, "Zed", now)
		acme := partnerAt(t, s, "Acme", now)
		off := partnerAt(t, s, "Disabled", now)
		fine := partnerAt(t, s, "Fine", now)
		for _, p := range []*partners.Partner{zed, acme, off, fine} {
			ok, err := s.InsertEndpoint(ctx, &webhook.Endpoint{PartnerID: p.ID, URL: "https://example.com/" + p.Name, Enabled: p != off,
				Secret: "whsec_" + p.Name, CreatedAt: now, UpdatedAt: now})
			require.NoError(t, err)
			require.True(t, ok)
		}
		none, err := s.FailingWebhooks(ctx)
		require.NoError(t, err)
		require.Empty(t, none)

		// event appends an event of p in status after attempts.
		event := func(p *partners.Partner, status string, attempts int) {
			t.Helper()
			tr := newTransaction(t, s, p, txOpts{}) // its own created event: pending, never attempted
			ev := &lifecycle.Event{ID: uuid.New(), PartnerID: p.ID, TransactionID: tr.ID, Type: lifecycle.EventCreated,
				Payload: []byte(`{}`), CreatedAt: now}
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.AppendEvent(ctx, ev) }))
			if attempts == 0 {
				return
			}
			at := store.Now()
			_, err := s.SaveEventState(ctx, &webhook.Event{ID: ev.ID, PublishStatus: status, Attempts: attempts, CycleAttempts: attempts,
				LastAttemptAt: &at, NextAttemptAt: ptr(at.Add(time.Minute))}, &webhook.Attempt{AttemptedAt: at, StatusCode: ptr(500)}, at)
			require.NoError(t, err)
		}
		event(zed, webhook.Failed, 5)
		event(acme, webhook.Failed, 5)
		event(acme, webhook.Pending, 1)
		event(acme, webhook.Delivered, 2)
		event(off, webhook.Failed, 5)
		event(fine, webhook.Delivered, 1)
		event(fine, webhook.Pending, 0)

		got, err := s.FailingWebhooks(ctx)
		require.NoError(t, err)
		require.Len(t, got, 2, "%+v", got)
		require.Equal(t, acme.ID, got[0].PartnerID, "by partner name")
		require.Equal(t, "Acme", got[0].PartnerName)
		require.Equal(t, "https://example.com/Acme", got[0].URL)
		require.Equal(t, 2, got[0].FailingEvents, "the failed one and the retrying one")
		require.Equal(t, zed.ID, got[1].PartnerID)
		require.Equal(t, 1, got[1].FailingEvents)

		require.NoError(t, s.DisableEndpoint(ctx, zed.ID, store.Now()))
		got, err = s.FailingWebhooks(ctx)
		require.NoError(t, err)
		require.Len(t, got, 1, "a disabled endpoint is not listed")
		require.Equal(t, acme.ID, got[0].PartnerID)
	})
}

// TestStageTotal counts and sums each stage's transactions exactly.
func TestStageTotal(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		empty, err := s.StageTotal(ctx, backoffice.StageFailed, store.Now())
		require.NoError(t, err)
		require.Equal(t, backoffice.StageFailed, empty.Stage)
		require.Zero(t, empty.Count)
		require.True(t, empty.Crypto.IsZero())
		require.True(t, empty.Fiat.IsZero())

		for range 3 {
			newTransaction(t, s, p, txOpts{status: lifecycle.Failed})
		}
		newTransaction(t, s, p, txOpts{status: lifecycle.OrderFilled})
		newTransaction(t, s, p, txOpts{})

		failed, err := s.StageTotal(ctx, backoffice.StageFailed, store.Now())
		require.NoError(t, err)
		require.Equal(t, backoffice.StageFailed, failed.Stage)
		require.Equal(t, 3, failed.Count)
		require.Equal(t, "300.000003", failed.Crypto.String(), "summed exactly")
		require.Equal(t, "462676.11", failed.Fiat.String())
		filled, err := s.StageTotal(ctx, backoffice.AwaitingSettlement, store.Now())
		require.NoError(t, err)
		require.Equal(t, 1, filled.Count)
		require.True(t, dec("100.000001").Equal(filled.Crypto))
		all, err := s.StageTotal(ctx, "", store.Now())
		require.NoError(t, err)
		require.Equal(t, 5, all.Count, "no stage: every transaction")
		_, err = s.StageTotal(ctx, "nonsense", store.Now())
		require.Equal(t, apperr.InvalidRequest, apperr.CodeOf(err))
	})
}

// TestAuditParties names who each audit entry concerns: the partner of its
// transaction or refund task, the partner or operator acted on, or the key's
// prefix and owner; an entry with none (another page's, or a fill batch's) is absent.
func TestAuditParties(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		none, err := s.AuditParties(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)
		o := newOperator(t, s)
		p := partnerAt(t, s, "Audited partner", store.Now())
		tr := newTransaction(t, s, p, txOpts{status: lifecycle.Completed})
		task := unmatchedDeposit(0, store.Now())
		task.Kind, task.TransactionID, task.PartnerID = lifecycle.TaskExcess, &tr.ID, &p.ID
		task, err = s.InsertUnmatchedDeposit(ctx, task)
		require.NoError(t, err)
		key := &apikeys.Key{ID: uuid.New(), Owner: apikeys.Partner, OwnerID: p.ID, Hash: "hash-" + uuid.NewString(), Prefix: "sk_sandbox_ab12",
			CreatedAt: store.Now()}
		require.NoError(t, s.InsertAPIKey(ctx, key))
		at := store.Now()
		entry := func(a audit.Action, f func(e *audit.Entry)) *audit.Entry {
			e := &audit.Entry{ID: uuid.New(), OperatorID: o.ID, Action: a, CreatedAt: at}
			f(e)
			require.NoError(t, s.InsertAudit(ctx, e))
			return e
		}
		fill := entry(audit.Fill, func(e *audit.Entry) { e.TransactionID = &tr.ID })
		resolved := entry(audit.ResolveRefunded, func(e *audit.Entry) { e.UnmatchedDepositID = &task.ID })
		created := entry(audit.PartnerCreated, func(e *audit.Entry) { e.SubjectID = &p.ID })
		opCreated := entry(audit.OperatorCreated, func(e *audit.Entry) { e.SubjectID = &o.ID })
		rolled := entry(audit.KeyRolled, func(e *audit.Entry) { e.SubjectID = &key.ID })
		bare := entry(audit.Refund, func(*audit.Entry) {})

		got, err := s.AuditParties(ctx, []uuid.UUID{fill.ID, resolved.ID, created.ID, opCreated.ID, rolled.ID, bare.ID})
		require.NoError(t, err)
		require.Len(t, got, 5, "the bare entry concerns nobody")
		for _, id := range []uuid.UUID{fill.ID, resolved.ID, created.ID, rolled.ID} {
			require.Equal(t, p.ID, *got[id].PartnerID, id)
			require.Equal(t, "Audited partner", *got[id].PartnerName, id)
		}
		require.Nil(t, got[fill.ID].SubjectName)
		require.Equal(t, "Audited partner", *got[created.ID].SubjectName)
		require.Nil(t, got[opCreated.ID].PartnerID)
		require.Equal(t, o.Name, *got[opCreated.ID].SubjectName)
		require.Equal(t, "sk_sandbox_ab12", *got[rolled.ID].SubjectName)
		only, err := s.AuditParties(ctx, []uuid.UUID{fill.ID})
		require.NoError(t, err)
		require.Len(t, only, 1)
	})
}

// TestStagesAreTheLifecyclePredicates holds the stage queries equal to their one
// definition in lifecycle (AwaitingFill, AwaitingPayout): transactions in every
// shape that matters (deposit confirming or confirmed, screening held or
// released, completed with and without the payout) are listed by a stage exactly
// when the predicate says so.
func TestStagesAreTheLifecyclePredicates(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		shape := func(status lifecycle.Status, dep string, scr lifecycle.Screening, paid bool) uuid.UUID {
			tr := newTransaction(t, s, p, txOpts{status: status})
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
				if dep != "" {
					d := &lifecycle.Deposit{ID: "dep-" + tr.ID.String(), Status: dep, Confirmations: 1, RequiredConfirmations: 3,
						Hash: "0x" + tr.ID.String(), Amount: tr.CryptoAmount, ReceivedAt: store.Now()}
					if err := tx.SaveDeposit(ctx, tr.ID, d); err != nil {
						return err
					}
				}
				cur, err := tx.TransactionForUpdate(ctx, tr.ID)
				if err != nil {
					return err
				}
				cur.Screening = scr
				if paid {
					cur.PayoutSettledAt = ptr(store.Now())
				}
				_, err = tx.UpdateTransaction(ctx, cur)
				return err
			}))
			return tr.ID
		}
		shape(lifecycle.DepositConfirming, lifecycle.DepositStatusConfirming, lifecycle.ScreeningClear, false)
		shape(lifecycle.DepositConfirming, lifecycle.DepositStatusConfirmed, lifecycle.ScreeningClear, false)
		shape(lifecycle.DepositConfirming, lifecycle.DepositStatusConfirmed, lifecycle.ScreeningNone, false)
		shape(lifecycle.DepositConfirming, lifecycle.DepositStatusConfirmed, lifecycle.ScreeningHeld, false)
		shape(lifecycle.DepositConfirming, lifecycle.DepositStatusConfirmed, lifecycle.ScreeningUnknown, false)
		shape(lifecycle.DepositConfirming, lifecycle.DepositStatusConfirmed, lifecycle.ScreeningReleased, false)
		shape(lifecycle.OrderFilled, lifecycle.DepositStatusConfirmed, lifecycle.ScreeningClear, false)
		shape(lifecycle.Completed, lifecycle.DepositStatusConfirmed, lifecycle.ScreeningClear, false)
		shape(lifecycle.Completed, lifecycle.DepositStatusConfirmed, lifecycle.ScreeningClear, true)
		shape(lifecycle.AwaitingDeposit, "", lifecycle.ScreeningNone, false)

		all, err := s.ListStage(ctx, backoffice.StageQuery{Limit: 100})
		require.NoError(t, err)
		require.Len(t, all, 10)
		for stage, pred := range map[backoffice.Stage]func(*lifecycle.Transaction) bool{
			backoffice.AwaitingFill:   lifecycle.AwaitingFill,
			backoffice.AwaitingPayout: lifecycle.AwaitingPayout,
		} {
			var want, got []uuid.UUID
			for _, tr := range all {
				if pred(tr) {
					want = append(want, tr.ID)
				}
			}
			listed, err := s.ListStage(ctx, backoffice.StageQuery{StageFilter: backoffice.StageFilter{Stage: stage}, Limit: 100})
			require.NoError(t, err)
			for _, tr := range listed {
				got = append(got, tr.ID)
			}
			require.NotEmpty(t, want, stage)
			require.ElementsMatch(t, want, got, "stage %s lists what lifecycle says", stage)
		}
	})
}

// TestKeysVersion: the keys' version changes when a key is added, rolled (its
// expiry set) or revoked, and only then.
func TestKeysVersion(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		version := func() string {
			v, err := s.KeysVersion(ctx)
			require.NoError(t, err)
			return v
		}
		p := newPartner(t, s)
		v0 := version()
		require.Equal(t, v0, version(), "unchanged: the same version")
		k := &apikeys.Key{ID: uuid.New(), Owner: apikeys.Partner, OwnerID: p.ID, Hash: "hash-" + uuid.NewString(), Prefix: "pk_sb_v", CreatedAt: store.Now()}
		require.NoError(t, s.InsertAPIKey(ctx, k))
		v1 := version()
		require.NotEqual(t, v0, v1, "a key added")
		k.ExpiresAt = ptr(store.Now().Add(time.Minute))
		require.NoError(t, s.UpdateAPIKey(ctx, k))
		v2 := version()
		require.NotEqual(t, v1, v2, "a key rolled")
		k.RevokedAt = ptr(store.Now())
		require.NoError(t, s.UpdateAPIKey(ctx, k))
		require.NotEqual(t, v2, version(), "a key revoked")
	})
}
