package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

// planRows is how many transactions the plan test seeds: enough that PostgreSQL
// reads a large table through an index only where one serves the statement (on a
// few hundred rows a sequential scan is cheaper and says nothing).
const planRows = 30000

// largeTables are the tables the seed fills with thousands of rows and that grow
// with the business: a read may not scan any of them sequentially.
var largeTables = map[string]bool{
	"transactions": true, "status_history": true, "events": true, "webhook_attempts": true,
	"deposits": true, "deposit_transfers": true, "chain_transfers": true,
	"operator_audit": true, "operator_batch_items": true,
}

// planSeed fills a database as a year of business leaves it, in one statement a
// table: 20 partners, planRows transactions in the status mix (most completed
// and paid out in daily payouts, the recent ones awaiting payout), their
// deposits, transfers seen on chain (and some unmatched), history, events with
// their attempts (a few failed, pending or requeued), audit rows and refund tasks.
var planSeed = []string{
	`INSERT INTO partners (id, name, environment, key_hash, fee_rate, share_rate, created_at)
	 SELECT ('00000000-0000-0000-0000-' || lpad(p::text, 12, '0'))::uuid, 'Partner ' || p, 'production',
	        md5('key' || p), 0.01, 0.5, now() - interval '2 years'
	 FROM generate_series(1, 20) p`,
	`INSERT INTO operators (id, name, key_hash, created_at)
	 VALUES ('00000000-0000-0000-0000-0000000000ff', 'Operator', md5('operator'), now() - interval '2 years')`,
	`INSERT INTO webhook_endpoints (partner_id, url, enabled, secret, created_at, updated_at)
	 SELECT ('00000000-0000-0000-0000-' || lpad(p::text, 12, '0'))::uuid, 'https://example.com/hook', p % 4 <> 0,
	        'secret', now(), now()
	 FROM generate_series(1, 20) p`,
	`INSERT INTO transactions (id, partner_id, merchant_reference, reference_key, crypto_currency, network,
	        crypto_amount, fiat_amount, rate, deposit_address, address_index, status, created_at, updated_at,
	        expires_at, payout_settled_at, version)
	 SELECT md5('tx' || g)::uuid, ('00000000-0000-0000-0000-' || lpad((g % 20 + 1)::text, 12, '0'))::uuid,
	        'REF-' || g, 'ref-' || g, 'USDT', CASE WHEN g % 3 = 0 THEN 'tron' ELSE 'ethereum' END,
	        (g % 900 + 10)::numeric, ((g % 900 + 10) * 1500)::numeric, 1500,
	        '0x' || substr(upper(md5('addr' || g)) || md5('addr2' || g), 1, 40), g,
	        CASE WHEN g % 1000 < 750 THEN 'completed' WHEN g % 1000 < 900 THEN 'expired' WHEN g % 1000 < 930 THEN 'failed'
	             WHEN g % 1000 < 933 THEN 'deposit_confirming' WHEN g % 1000 < 935 THEN 'order_filled'
	             WHEN g % 1000 < 960 THEN 'refunded' ELSE 'awaiting_deposit' END,
	        now() - g * interval '17 minutes', now() - g * interval '17 minutes' + interval '1 hour',
	        now() - g * interval '17 minutes' + interval '30 minutes',
	        CASE WHEN g % 1000 < 750 AND g > 1000 THEN now() - g * interval '17 minutes' + interval '1 day' END, 3
	 FROM generate_series(1, ` + fmt.Sprint(planRows) + `) g`,
	`INSERT INTO deposits (transaction_id, deposit_id, status, confirmations, required_confirmations, chain_hash,
	        amount, received_at, confirmed_at, updated_at)
	 SELECT id, 'dep-' || address_index, CASE WHEN status = 'deposit_confirming' AND address_index % 2 = 0 THEN 'confirming' ELSE 'confirmed' END,
	        20, 12, '0x' || md5('hash' || address_index) || md5('hash2' || address_index), crypto_amount,
	        created_at + interval '5 minutes', created_at + interval '10 minutes', updated_at
	 FROM transactions WHERE status NOT IN ('expired', 'awaiting_deposit')`,
	`INSERT INTO deposit_transfers (transaction_id, position, transfer_id, tx_hash, log_index, from_address, amount,
	        block_number, confirmations, required_confirmations, received_at, confirmed_at)
	 SELECT transaction_id, 0, deposit_id, chain_hash, 0, '0xsender', amount, 1000000, 20, 12, received_at, confirmed_at
	 FROM deposits`,
	`INSERT INTO chain_transfers (network, tx_hash, log_index, token, block_number, block_hash, block_time, from_address,
	        to_address, raw_amount, amount, transaction_id, deposit_id, state, final, created_at, updated_at)
	 SELECT t.network, d.chain_hash, 0, 'USDT', 1000000 + t.address_index, md5('block' || t.address_index), d.received_at,
	        '0xsender', t.deposit_address, d.amount * 1000000, d.amount, t.id, d.deposit_id, 'confirmed', true,
	        d.received_at, d.received_at
	 FROM deposits d JOIN transactions t ON t.id = d.transaction_id`,
	`INSERT INTO chain_transfers (network, tx_hash, log_index, token, block_number, block_hash, block_time, from_address,
	        to_address, raw_amount, amount, deposit_id, state, final, created_at, updated_at)
	 SELECT 'ethereum', '0x' || md5('stray' || g) || md5('stray2' || g), 0, 'USDT', 2000000 + g, md5('sblock' || g),
	        now() - g * interval '1 hour', '0xstranger', '0xsomewhere', 5000000, 5, '', 'unmatched', g > 10,
	        now() - g * interval '1 hour', now() - g * interval '1 hour'
	 FROM generate_series(1, 1000) g`,
	`INSERT INTO status_history (transaction_id, from_status, to_status, reason, changed_at)
	 SELECT t.id, CASE WHEN k = 0 THEN NULL ELSE 'awaiting_deposit' END, CASE WHEN k = 0 THEN 'awaiting_deposit' ELSE t.status END,
	        CASE WHEN k = 0 THEN 'created' ELSE 'payout:settled' END, t.created_at + k * interval '1 minute'
	 FROM transactions t, generate_series(0, 1) k`,
	`INSERT INTO events (id, partner_id, transaction_id, type, payload, created_at, publish_status, attempts,
	        cycle_attempts, last_attempt_at, next_attempt_at, requeued)
	 SELECT md5('event' || t.address_index)::uuid, t.partner_id, t.id, 'transaction.created', '{}', t.created_at,
	        CASE WHEN t.address_index % 1000 = 7 THEN 'failed' WHEN t.address_index % 1000 = 8 THEN 'pending' ELSE 'delivered' END,
	        CASE WHEN t.address_index % 1000 = 8 AND t.address_index % 2000 <> 8 THEN 0 ELSE 1 END, 1, t.created_at,
	        t.created_at, t.address_index % 1000 = 9
	 FROM transactions t`,
	`INSERT INTO webhook_attempts (event_id, attempted_at, status_code, duration_ms)
	 SELECT id, created_at, CASE WHEN publish_status = 'failed' THEN 500 ELSE 200 END, 40 FROM events WHERE attempts > 0`,
	`CREATE TEMPORARY TABLE plan_paid AS
	 SELECT t.id, t.partner_id, t.fiat_amount, t.crypto_amount, t.payout_settled_at, t.address_index,
	        md5('batch' || t.partner_id || (t.address_index / 600))::uuid AS batch_id
	 FROM transactions t WHERE t.payout_settled_at IS NOT NULL`,
	`INSERT INTO operator_batches (id, kind, partner_id, reference, fiat_amount, crypto_amount, operator_id, created_at)
	 SELECT batch_id, 'payout', partner_id, 'BANK-' || batch_id, sum(fiat_amount), sum(crypto_amount),
	        '00000000-0000-0000-0000-0000000000ff', max(payout_settled_at)
	 FROM plan_paid GROUP BY batch_id, partner_id`,
	`INSERT INTO operator_batch_items (batch_id, kind, transaction_id, position)
	 SELECT batch_id, 'payout', id, row_number() OVER (PARTITION BY batch_id ORDER BY address_index) - 1 FROM plan_paid`,
	`INSERT INTO operator_audit (id, operator_id, action, transaction_id, batch_id, reference, created_at)
	 SELECT md5('audit' || id)::uuid, '00000000-0000-0000-0000-0000000000ff', 'batch_payout', id, batch_id, 'BANK', payout_settled_at
	 FROM plan_paid`,
	`INSERT INTO refund_tasks (id, network, tx_hash, log_index, to_address, amount, raw_amount, block_number, status,
	        created_at, kind, from_address)
	 SELECT md5('task' || g)::uuid, 'ethereum', '0x' || md5('stray' || g) || md5('stray2' || g), 0, '0xsomewhere', 5,
	        '5000000', 2000000 + g, CASE WHEN g % 10 = 0 THEN 'open' ELSE 'refunded' END, now() - g * interval '1 hour',
	        'unmatched', '0xstranger'
	 FROM generate_series(1, 1000) g`,
	`DROP TABLE plan_paid`,
	`ANALYZE`,
}

// planNode is the part of a node of EXPLAIN (FORMAT JSON) the test reads.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	Plans        []planNode `json:"Plans"`
}

// describe lists a plan's scans, outermost first ("Index Scan of transactions
// using transactions_pkey").
func (n planNode) describe(out []string) []string {
	if n.RelationName != "" {
		d := n.NodeType + " of " + n.RelationName
		if n.IndexName != "" {
			d += " using " + n.IndexName
		}
		out = append(out, d)
	} else if n.IndexName != "" {
		out = append(out, n.NodeType+" using "+n.IndexName)
	}
	for _, c := range n.Plans {
		out = c.describe(out)
	}
	return out
}

// seqScans lists the large tables the plan reads sequentially.
func (n planNode) seqScans(out []string) []string {
	if n.NodeType == "Seq Scan" && largeTables[n.RelationName] {
		out = append(out, n.RelationName)
	}
	for _, c := range n.Plans {
		out = c.seqScans(out)
	}
	return out
}

// TestReadPlans seeds a PostgreSQL database of a year's business, runs each read
// of the back office, the payouts and the background sweeps as the store issues
// it, and fails when the plan of a statement it sent scans a large table
// sequentially: every such read must be served by an index or a bounded scan, so
// its time does not grow with the database (on millions of transactions a
// sequential scan is seconds). Each read must also find what it looks for, so
// the plan checked is the plan of a read that works.
func TestReadPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, testdb.PostgresSchema(t))
	for _, q := range planSeed {
		_, err := s.SQL().ExecContext(ctx, q)
		require.NoError(t, err, q)
	}

	var (
		mu   sync.Mutex
		sent []store.Statement
	)
	require.NoError(t, s.RecordReads(func(st store.Statement) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, st)
	}))

	id := func(g int) uuid.UUID {
		var u uuid.UUID
		require.NoError(t, s.SQL().QueryRowContext(ctx, `SELECT md5('tx' || $1::int)::uuid`, g).Scan(&u))
		return u
	}
	partner := func(p int) uuid.UUID { return uuid.MustParse(fmt.Sprintf("00000000-0000-0000-0000-%012d", p)) }

	// Transaction 12345 is completed and paid (g % 1000 = 345), of partner 6.
	const g = 12345
	paid, owner := id(g), partner(g%20+1)
	var address, hash string
	var batchID uuid.UUID
	require.NoError(t, s.SQL().QueryRowContext(ctx, `SELECT t.deposit_address, d.chain_hash, i.batch_id FROM transactions t
		JOIN deposits d ON d.transaction_id = t.id JOIN operator_batch_items i ON i.transaction_id = t.id WHERE t.id = $1`, paid).
		Scan(&address, &hash, &batchID))
	var event uuid.UUID
	require.NoError(t, s.SQL().QueryRowContext(ctx, `SELECT id FROM events WHERE transaction_id = $1`, paid).Scan(&event))
	now := time.Now().UTC()
	stuck := now.Add(-backoffice.DefaultConfirmingTooLong)
	ptr := func(v string) *string { return &v }
	stage := func(st backoffice.Stage, search string, oldest bool) backoffice.StageQuery {
		q := backoffice.StageQuery{StageFilter: backoffice.StageFilter{Stage: st, Oldest: oldest}, StuckBefore: stuck, Limit: 51}
		if search != "" {
			k := transactions.ReferenceKey(search)
			q.Search, q.SearchKey = &search, &k
		}
		return q
	}
	found := func(ts []*lifecycle.Transaction, err error) error {
		if err == nil && (len(ts) != 1 || ts[0].ID != paid) {
			return fmt.Errorf("found %d transactions, want %s alone", len(ts), paid)
		}
		return err
	}
	some := func(n int, err error) error {
		if err == nil && n == 0 {
			return fmt.Errorf("found nothing")
		}
		return err
	}
	reads := []struct {
		name string
		run  func() error
	}{
		// The operator's transaction page (its case file).
		{"transaction", func() error { _, err := s.Transaction(ctx, paid); return err }},
		{"transaction's chain transfers", func() error { ts, err := s.DepositTransfers(ctx, paid); return some(len(ts), err) }},
		{"transaction's history", func() error { h, err := s.History(ctx, paid); return some(len(h), err) }},
		{"transaction's fill", func() error { _, err := s.FillsOf(ctx, []uuid.UUID{paid}); return err }},
		{"transaction's payout", func() error {
			b, err := s.BatchOf(ctx, batches.Payout, paid)
			if err == nil && b == nil {
				return fmt.Errorf("no payout")
			}
			return err
		}},
		{"transaction's audit", func() error {
			a, err := s.ListAudit(ctx, audit.Filter{TransactionID: &paid}, nil, 51)
			return some(len(a), err)
		}},
		{"transaction's events", func() error {
			e, err := s.ListEvents(ctx, owner, webhook.ListQuery{Filter: webhook.Filter{TransactionID: &paid}, Limit: 51})
			return some(len(e), err)
		}},
		{"event's attempts", func() error { a, err := s.AttemptsOf(ctx, event); return some(len(a), err) }},

		// The operator's search, across stages and within one.
		{"search by reference", func() error { return found(s.ListStage(ctx, stage("", "ref-12345", false))) }},
		{"search by address", func() error { return found(s.ListStage(ctx, stage("", strings.ToLower(address), false))) }},
		{"search by hash", func() error { return found(s.ListStage(ctx, stage("", strings.ToUpper(hash), false))) }},
		{"search by id", func() error { return found(s.ListStage(ctx, stage("", paid.String(), false))) }},
		{"search in a stage", func() error {
			ts, err := s.ListStage(ctx, stage(backoffice.AwaitingPayout, "REF-12345", false))
			if err == nil && len(ts) != 0 {
				return fmt.Errorf("a paid transaction listed awaiting payout")
			}
			return err
		}},

		// The operator's lists.
		{"list without a stage", func() error { ts, err := s.ListStage(ctx, stage("", "", false)); return some(len(ts), err) }},
		{"list without a stage, oldest first", func() error {
			ts, err := s.ListStage(ctx, stage("", "", true))
			return some(len(ts), err)
		}},
		{"list of a partner", func() error {
			q := stage("", "", false)
			q.PartnerID = &owner
			ts, err := s.ListStage(ctx, q)
			return some(len(ts), err)
		}},
		{"awaiting payout", func() error {
			ts, err := s.ListStage(ctx, stage(backoffice.AwaitingPayout, "", false))
			return some(len(ts), err)
		}},
		{"awaiting payout, oldest first", func() error {
			ts, err := s.ListStage(ctx, stage(backoffice.AwaitingPayout, "", true))
			return some(len(ts), err)
		}},
		{"awaiting fill", func() error {
			ts, err := s.ListStage(ctx, stage(backoffice.AwaitingFill, "", false))
			return some(len(ts), err)
		}},
		{"failed", func() error {
			ts, err := s.ListStage(ctx, stage(backoffice.StageFailed, "", true))
			return some(len(ts), err)
		}},

		// The overview.
		{"overview's stage totals", func() error {
			n := 0
			for _, st := range backoffice.Stages {
				v, err := s.StageTotal(ctx, st, stuck)
				if err != nil {
					return err
				}
				n += v.Count
			}
			return some(n, nil)
		}},
		{"overview's screening", func() error {
			_, err := s.CountInScreening(ctx, backoffice.WaitingScreening)
			return err
		}},
		{"overview's refund work", func() error { k, err := s.OpenRefundTasksByKind(ctx); return some(len(k), err) }},
		{"overview's failing webhooks", func() error { f, err := s.FailingWebhooks(ctx); return some(len(f), err) }},

		// A partner's payouts: the list, a payout's detail, a page of the export.
		{"payouts", func() error {
			b, err := s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &owner, Limit: 51})
			return some(len(b), err)
		}},
		{"payout", func() error { _, err := s.Batch(ctx, batchID); return err }},
		{"payout's transactions", func() error {
			ts, err := s.BatchTransactions(ctx, owner, []uuid.UUID{batchID})
			return some(len(ts[batchID]), err)
		}},
		{"payouts export page", func() error {
			from, to := now.AddDate(0, -1, 0), now
			b, err := s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &owner, From: &from, To: &to, Limit: 100})
			if err != nil {
				return err
			}
			ids := make([]uuid.UUID, len(b))
			for i := range b {
				ids[i] = b[i].ID
			}
			ts, err := s.BatchTransactions(ctx, owner, ids)
			return some(len(ts), err)
		}},

		// The partner API's reads of one transaction.
		{"partner's transaction", func() error { _, err := s.TransactionByID(ctx, owner, paid); return err }},
		{"partner's transaction by reference", func() error {
			_, err := s.TransactionByReference(ctx, owner, "ref-12345")
			return err
		}},
		{"partner's list by tx hash", func() error {
			ts, err := s.ListTransactions(ctx, owner, transactions.ListQuery{HashKeys: []string{hash}, Limit: 51})
			if err == nil && len(ts) != 1 {
				return fmt.Errorf("found %d", len(ts))
			}
			return err
		}},
		{"partner's list by address", func() error {
			ts, err := s.ListTransactions(ctx, owner, transactions.ListQuery{AddressKey: ptr(address), Limit: 51})
			if err == nil && len(ts) != 1 {
				return fmt.Errorf("found %d", len(ts))
			}
			return err
		}},

		// The background sweeps.
		{"webhook requeue sweep", func() error {
			ids, err := s.StaleRequeues(ctx, now.Add(-time.Minute), 100)
			return some(len(ids), err)
		}},
		{"expiry sweep", func() error { _, err := s.DueForExpiry(ctx, now, 100); return err }},
	}

	for _, r := range reads {
		mu.Lock()
		sent = nil
		mu.Unlock()
		require.NoError(t, r.run(), r.name)
		mu.Lock()
		stmts := sent
		mu.Unlock()
		require.NotEmpty(t, stmts, "%s: no statement recorded", r.name)
		for _, st := range stmts {
			var doc string
			require.NoError(t, s.SQL().QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+st.SQL, st.Vars...).Scan(&doc), st.SQL)
			var plans []struct {
				Plan planNode `json:"Plan"`
			}
			require.NoError(t, json.Unmarshal([]byte(doc), &plans))
			require.Len(t, plans, 1)
			t.Logf("%s: %s\n\t%s", r.name, strings.Join(plans[0].Plan.describe(nil), "; "), oneLine(st.SQL))
			if seq := plans[0].Plan.seqScans(nil); len(seq) > 0 {
				t.Errorf("%s: a sequential scan of %s in the plan of\n%s\nplan: %s", r.name, strings.Join(seq, ", "), st.SQL, doc)
			}
		}
	}
}

// oneLine is sql on one line, for the log.
func oneLine(sql string) string { return strings.Join(strings.Fields(sql), " ") }
