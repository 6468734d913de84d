-- seed.sql — a year of business in a migrated partnerd database, for
-- scripts/benchscale.sh. psql variables: n (transactions), big (the partner the
-- CLI created: the largest, about 22 % of the transactions), op (the operator the
-- CLI created; four more are added).
--
-- Shape, per transaction g of 1..n (g grows with time; the newest is a minute old):
--   partners      50, skewed: the largest 22 %, the next about 11 %, the last a
--                 handful (a square law over the other 49);
--   created_at    spread evenly over the last 365 days;
--   status        by age and a hash of g: the last 30 minutes awaiting a deposit
--                 or confirming, the last day some filled (awaiting settlement) and
--                 confirming (awaiting a fill); the rest 62 % completed, 23 %
--                 expired, 3 % failed, 1.5 % refunded, 4 % cancelled;
--   payouts       daily per partner, the day after (completed ones of the last
--                 day or so await theirs);
--   fills         hourly batches of every transaction sold;
--   history       2 to 7 entries a transaction as the lifecycle writes them;
--   events        1 to 5 a transaction with a snapshot payload (about 800 bytes),
--                 one delivery attempt each (three for the 0.2 % that failed), of
--                 the last 30 days only: the server purges older ones
--                 (webhook.Retention);
--   deposits      one transfer each, recorded on chain too; one stray transfer
--                 to an unknown address per 500 transactions, with its refund task;
--   audit         the fill, the settlement and the payout of each completed
--                 transaction, refunds and failures: about two rows a transaction.
--
-- Loading: the large tables lose their keys and indexes, are filled by one
-- INSERT … SELECT each (generate_series and joins; no client round trips), and get
-- them back built by sort, which on two cores is several times faster than
-- maintaining a dozen indexes row by row. Foreign keys come back NOT VALID (the
-- rows are made consistent by construction; checking them would double the time).
\set ON_ERROR_STOP on
\timing off
SET synchronous_commit = off;
SET session_replication_role = replica;
SET maintenance_work_mem = '512MB';
SET work_mem = '128MB';
SET max_parallel_maintenance_workers = 2;

CREATE TABLE scale_ddl (ord int NOT NULL, stmt text NOT NULL);
CREATE TEMPORARY TABLE scale_tables (name text PRIMARY KEY);
INSERT INTO scale_tables VALUES ('transactions'), ('status_history'), ('events'), ('webhook_attempts'), ('deposits'),
    ('deposit_transfers'), ('chain_transfers'), ('operator_audit'), ('operator_batches'), ('operator_batch_items'),
    ('order_fills'), ('revenue'), ('refund_tasks');

-- What to put back: keys (1), indexes (2), foreign keys (3).
INSERT INTO scale_ddl
SELECT 1, format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid))
FROM pg_constraint c WHERE c.contype IN ('p', 'u') AND c.conrelid::regclass::text IN (SELECT name FROM scale_tables);
INSERT INTO scale_ddl
SELECT 2, pg_get_indexdef(i.indexrelid)
FROM pg_index i WHERE i.indrelid::regclass::text IN (SELECT name FROM scale_tables)
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid);
INSERT INTO scale_ddl
SELECT 3, format('ALTER TABLE %s ADD CONSTRAINT %I %s NOT VALID', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid))
FROM pg_constraint c WHERE c.contype = 'f'
  AND (c.conrelid::regclass::text IN (SELECT name FROM scale_tables) OR c.confrelid::regclass::text IN (SELECT name FROM scale_tables));

DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT c.conrelid::regclass AS t, c.conname FROM pg_constraint c WHERE c.contype = 'f'
        AND (c.conrelid::regclass::text IN (SELECT name FROM scale_tables) OR c.confrelid::regclass::text IN (SELECT name FROM scale_tables))
    LOOP EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname); END LOOP;
    FOR r IN SELECT c.conrelid::regclass AS t, c.conname FROM pg_constraint c WHERE c.contype IN ('p', 'u')
        AND c.conrelid::regclass::text IN (SELECT name FROM scale_tables)
    LOOP EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname); END LOOP;
    FOR r IN SELECT i.indexrelid::regclass AS ix FROM pg_index i WHERE i.indrelid::regclass::text IN (SELECT name FROM scale_tables)
    LOOP EXECUTE format('DROP INDEX %s', r.ix); END LOOP;
END $$;

-- Partners 2..50 (the CLI made the first) and four more operators.
INSERT INTO partners (id, name, environment, key_hash, fee_rate, share_rate, created_at)
SELECT ('00000000-0000-4000-8000-' || lpad(p::text, 12, '0'))::uuid, 'Partner ' || p, 'production',
       md5('scale-key' || p), 0.01, 0.5, now() - interval '2 years'
FROM generate_series(2, 50) p;
INSERT INTO operators (id, name, key_hash, created_at, roles)
SELECT ('00000000-0000-4000-9000-' || lpad(o::text, 12, '0'))::uuid, 'Operator ' || o, md5('scale-operator' || o),
       now() - interval '2 years', 'support,treasury'
FROM generate_series(2, 5) o;
CREATE TEMPORARY TABLE scale_partner (idx int PRIMARY KEY, id uuid NOT NULL);
INSERT INTO scale_partner VALUES (1, :'big');
INSERT INTO scale_partner SELECT p, ('00000000-0000-4000-8000-' || lpad(p::text, 12, '0'))::uuid FROM generate_series(2, 50) p;
CREATE TEMPORARY TABLE scale_operator (idx int PRIMARY KEY, id uuid NOT NULL);
INSERT INTO scale_operator VALUES (0, :'op');
INSERT INTO scale_operator SELECT o - 1, ('00000000-0000-4000-9000-' || lpad(o::text, 12, '0'))::uuid FROM generate_series(2, 5) o;
INSERT INTO webhook_endpoints (partner_id, url, enabled, secret, created_at, updated_at)
SELECT id, 'https://hooks-' || idx || '.invalid/partnerd', idx % 7 <> 0, 'whsec_scale', now() - interval '1 year', now() - interval '1 year'
FROM scale_partner ON CONFLICT DO NOTHING;

\echo '  transactions'
INSERT INTO transactions (id, partner_id, merchant_reference, reference_key, merchant_id, terminal_id, crypto_currency,
        network, crypto_amount, fiat_amount, rate, deposit_address, address_index, status, created_at, updated_at,
        expires_at, version, payout_settled_at, screening)
SELECT md5('tx' || g)::uuid, p.id, 'ORD-' || g, 'ord-' || g, 'M-' || (g % 300), 'T-' || (g % 3000), 'usdt',
       x.network, round(x.fiat / x.rate, 6), x.fiat, x.rate, x.address, g, x.status, x.created_at,
       x.created_at + CASE x.status WHEN 'awaiting_deposit' THEN interval '0' WHEN 'completed' THEN interval '50 minutes' ELSE interval '30 minutes' END,
       x.created_at + interval '30 minutes', 3,
       CASE WHEN x.status = 'completed' AND date_trunc('day', x.created_at) + interval '34 hours' < now() - interval '1 hour'
            THEN date_trunc('day', x.created_at) + interval '34 hours' + (g % 600) * interval '1 second' END,
       CASE WHEN x.status IN ('awaiting_deposit', 'expired', 'cancelled') THEN '' ELSE 'clear' END
FROM generate_series(1, :n) g
CROSS JOIN LATERAL (SELECT ((g::bigint * 2654435761) % 4294967296) / 4294967296.0 AS u, (g::bigint * 7919) % 1000 AS v,
                           now() - interval '1 minute' - ((:n - g)::float8 / :n) * interval '365 days' AS created_at) h
CROSS JOIN LATERAL (SELECT
        CASE WHEN g % 10 < 7 THEN 'bep20' ELSE 'trc20' END AS network,
        CASE WHEN g % 10 < 7 THEN '0x' || substr(md5('a' || g), 1, 20) || upper(substr(md5('b' || g), 1, 20))
             ELSE 'T' || upper(substr(md5('a' || g), 1, 17)) || substr(md5('b' || g), 1, 16) END AS address,
        (5000 + (g::bigint * 37) % 995000)::numeric(20,2) AS fiat,
        (1500 + g % 100)::numeric(20,2) AS rate,
        h.created_at,
        CASE WHEN h.created_at > now() - interval '30 minutes' THEN CASE WHEN h.v < 700 THEN 'awaiting_deposit' ELSE 'deposit_confirming' END
             WHEN h.v < 620 THEN 'completed'
             WHEN h.v < 850 THEN 'expired'
             WHEN h.v < 880 THEN 'failed'
             WHEN h.v < 895 THEN 'refunded'
             WHEN h.v < 935 THEN 'cancelled'
             WHEN h.created_at > now() - interval '1 day' AND h.v < 965 THEN 'order_filled'
             WHEN h.created_at > now() - interval '1 day' THEN 'deposit_confirming'
             ELSE 'expired' END AS status) x
JOIN scale_partner p ON p.idx = CASE WHEN h.u < 0.22 THEN 1 ELSE least(50, 2 + floor(49 * power((h.u - 0.22) / 0.78, 2))::int) END;

\echo '  deposits, transfers'
INSERT INTO deposits (transaction_id, deposit_id, status, confirmations, required_confirmations, chain_hash, amount,
        received_at, confirmed_at, updated_at)
SELECT t.id, t.network || ':' || d.hash || ':0',
       CASE t.status WHEN 'refunded' THEN 'refunded' WHEN 'failed' THEN 'underpaid'
            WHEN 'deposit_confirming' THEN CASE WHEN t.address_index % 2 = 0 THEN 'confirming' ELSE 'confirmed' END
            ELSE 'confirmed' END,
       CASE WHEN t.status = 'deposit_confirming' AND t.address_index % 2 = 0 THEN 3 ELSE 20 END, 15, d.hash,
       CASE WHEN t.status = 'failed' THEN round(t.crypto_amount / 2, 6) ELSE t.crypto_amount END,
       t.created_at + interval '5 minutes',
       CASE WHEN t.status = 'deposit_confirming' AND t.address_index % 2 = 0 THEN NULL ELSE t.created_at + interval '10 minutes' END,
       t.created_at + interval '10 minutes'
FROM transactions t
CROSS JOIN LATERAL (SELECT CASE WHEN t.network = 'bep20' THEN '0x' ELSE '' END || md5('h' || t.address_index) || md5('i' || t.address_index) AS hash) d
WHERE t.status IN ('deposit_confirming', 'order_filled', 'completed', 'failed', 'refunded');

INSERT INTO deposit_transfers (transaction_id, position, transfer_id, tx_hash, log_index, from_address, amount, block_number,
        confirmations, required_confirmations, received_at, confirmed_at)
SELECT d.transaction_id, 0, d.deposit_id, d.chain_hash, 0, '0xsender' || (t.address_index % 5000), d.amount,
       40000000 + t.address_index, d.confirmations, d.required_confirmations, d.received_at, d.confirmed_at
FROM deposits d JOIN transactions t ON t.id = d.transaction_id;

INSERT INTO chain_transfers (network, tx_hash, log_index, token, block_number, block_hash, block_time, from_address, to_address,
        raw_amount, amount, transaction_id, deposit_id, state, final, created_at, updated_at)
SELECT t.network, d.chain_hash, 0, 'usdt', 40000000 + t.address_index, md5('block' || t.address_index), d.received_at,
       '0xsender' || (t.address_index % 5000), t.deposit_address,
       d.amount * CASE WHEN t.network = 'bep20' THEN 1000000000000000000 ELSE 1000000 END, d.amount, t.id, d.deposit_id,
       CASE WHEN d.status = 'confirming' THEN 'pending' ELSE 'confirmed' END, d.status <> 'confirming', d.received_at, d.updated_at
FROM deposits d JOIN transactions t ON t.id = d.transaction_id;

-- Stray transfers to addresses of no transaction, and their refund tasks.
INSERT INTO chain_transfers (network, tx_hash, log_index, token, block_number, block_hash, block_time, from_address, to_address,
        raw_amount, amount, deposit_id, state, final, created_at, updated_at)
SELECT 'bep20', '0x' || md5('stray' || s) || md5('stray2' || s), 0, 'usdt', 30000000 + s, md5('sblock' || s), at,
       '0xstranger' || (s % 100), '0xnowhere' || s, 5000000000000000000, 5, '', 'unmatched', at < now() - interval '1 hour', at, at
FROM generate_series(1, greatest(:n / 500, 10)) s
CROSS JOIN LATERAL (SELECT now() - (s::float8 / greatest(:n / 500, 10)) * interval '365 days' AS at) a;
INSERT INTO refund_tasks (id, network, tx_hash, log_index, to_address, amount, raw_amount, block_number, status, created_at, kind,
        from_address, resolved_at, resolved_by, resolution_tx_hash)
SELECT md5('task' || c.tx_hash)::uuid, c.network, c.tx_hash, 0, c.to_address, c.amount, c.raw_amount::text, c.block_number,
       CASE WHEN c.created_at > now() - interval '7 days' THEN 'open' ELSE 'refunded' END, c.created_at, 'unmatched', c.from_address,
       CASE WHEN c.created_at <= now() - interval '7 days' THEN c.created_at + interval '2 days' END,
       CASE WHEN c.created_at <= now() - interval '7 days' THEN (SELECT id FROM scale_operator WHERE idx = 0) END,
       CASE WHEN c.created_at <= now() - interval '7 days' THEN '0x' || md5('refund' || c.tx_hash) END
FROM chain_transfers c WHERE c.state = 'unmatched';

\echo '  status history'
CREATE TEMPORARY TABLE scale_steps (status text, k int, from_status text, to_status text, reason text, after interval, event text);
INSERT INTO scale_steps VALUES
    ('awaiting_deposit', 0, NULL, 'awaiting_deposit', 'transaction:created', '0', 'transaction.created'),
    ('cancelled', 0, NULL, 'awaiting_deposit', 'transaction:created', '0', 'transaction.created'),
    ('cancelled', 1, 'awaiting_deposit', 'cancelled', 'partner:cancelled', '10 minutes', NULL),
    ('expired', 0, NULL, 'awaiting_deposit', 'transaction:created', '0', 'transaction.created'),
    ('expired', 1, 'awaiting_deposit', 'expired', 'system:expired', '30 minutes', 'transaction.expired'),
    ('deposit_confirming', 0, NULL, 'awaiting_deposit', 'transaction:created', '0', 'transaction.created'),
    ('deposit_confirming', 1, 'awaiting_deposit', 'deposit_confirming', 'deposit:detected', '5 minutes', 'deposit.detected'),
    ('order_filled', 0, NULL, 'awaiting_deposit', 'transaction:created', '0', 'transaction.created'),
    ('order_filled', 1, 'awaiting_deposit', 'deposit_confirming', 'deposit:detected', '5 minutes', 'deposit.detected'),
    ('order_filled', 2, 'deposit_confirming', 'deposit_confirming', 'deposit:confirmed', '10 minutes', 'deposit.confirmed'),
    ('order_filled', 3, 'deposit_confirming', 'order_filled', 'order:filled', '40 minutes', NULL),
    ('completed', 0, NULL, 'awaiting_deposit', 'transaction:created', '0', 'transaction.created'),
    ('completed', 1, 'awaiting_deposit', 'deposit_confirming', 'deposit:detected', '5 minutes', 'deposit.detected'),
    ('completed', 2, 'deposit_confirming', 'deposit_confirming', 'deposit:confirmed', '10 minutes', 'deposit.confirmed'),
    ('completed', 3, 'deposit_confirming', 'order_filled', 'order:filled', '40 minutes', NULL),
    ('completed', 4, 'order_filled', 'completed', 'order:settled', '50 minutes', 'transaction.completed'),
    ('completed', 5, 'completed', 'completed', 'payout:settled', NULL, 'payout.settled'),
    ('failed', 0, NULL, 'awaiting_deposit', 'transaction:created', '0', 'transaction.created'),
    ('failed', 1, 'awaiting_deposit', 'deposit_confirming', 'deposit:detected', '5 minutes', 'deposit.detected'),
    ('failed', 2, 'deposit_confirming', 'failed', 'deposit:failed', '40 minutes', 'transaction.failed'),
    ('refunded', 0, NULL, 'awaiting_deposit', 'transaction:created', '0', 'transaction.created'),
    ('refunded', 1, 'awaiting_deposit', 'deposit_confirming', 'deposit:detected', '5 minutes', 'deposit.detected'),
    ('refunded', 2, 'deposit_confirming', 'failed', 'deposit:failed', '40 minutes', 'transaction.failed'),
    ('refunded', 3, 'failed', 'refunded', 'deposit:refunded', '2 hours', 'transaction.refunded');

INSERT INTO status_history (transaction_id, from_status, to_status, reason, metadata, changed_at)
SELECT t.id, s.from_status, s.to_status, s.reason,
       CASE WHEN s.after IS NULL THEN '{"operator_id":"' || o.id || '","reference":"NIP-' || t.partner_id || '-' || to_char(t.payout_settled_at, 'YYYYMMDD') || '"}'
            WHEN s.reason = 'order:filled' THEN '{"operator_id":"' || o.id || '","reference":"FILL-' || to_char(t.created_at + interval '40 minutes', 'YYYYMMDDHH24') || '"}'
            WHEN s.reason LIKE 'deposit:%' THEN '{"tx_hash":"' || md5('h' || t.address_index) || '","confirmations":20}' END,
       coalesce(t.created_at + s.after, t.payout_settled_at)
FROM transactions t JOIN scale_steps s ON s.status = t.status
JOIN scale_operator o ON o.idx = t.address_index % 5
WHERE s.after IS NOT NULL OR t.payout_settled_at IS NOT NULL
ORDER BY t.created_at, s.k;

\echo '  events'
INSERT INTO events (id, partner_id, transaction_id, type, payload, created_at, publish_status, attempts, cycle_attempts,
        last_attempt_at, next_attempt_at, requeued)
SELECT md5('ev' || t.address_index || '.' || s.k)::uuid, t.partner_id, t.id, s.event,
       format('{"id":"%s","type":"%s","created_at":"%s","data":{"id":"%s","status":"%s","merchant_reference":"%s","merchant_id":"%s","terminal_id":"%s","network":"%s","crypto_currency":"usdt","crypto_amount":"%s","amount":"%s","rate":"%s","deposit_address":"%s","expires_at":"%s","created_at":"%s","updated_at":"%s","deposit_id":null,"deposit_status":null,"confirmations":null,"required_confirmations":null,"awaiting_finality":false,"received_at":null,"confirmed_at":null,"deposit_amount":null,"deposit_tx_hash":null,"deposits":[],"under_review":false}}',
              md5('ev' || t.address_index || '.' || s.k)::uuid, s.event, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), t.id, s.to_status,
              t.merchant_reference, t.merchant_id, t.terminal_id, t.network, t.crypto_amount, t.fiat_amount, t.rate, t.deposit_address,
              to_char(t.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
              to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')),
       at, CASE WHEN (t.address_index * 13 + s.k) % 500 = 0 THEN 'failed' ELSE 'delivered' END,
       CASE WHEN (t.address_index * 13 + s.k) % 500 = 0 THEN 3 ELSE 1 END,
       CASE WHEN (t.address_index * 13 + s.k) % 500 = 0 THEN 3 ELSE 1 END,
       at + interval '1 second', NULL, false
FROM transactions t JOIN scale_steps s ON s.status = t.status AND s.event IS NOT NULL
CROSS JOIN LATERAL (SELECT coalesce(t.created_at + s.after, t.payout_settled_at) AS at) a
WHERE a.at > now() - interval '30 days' + interval '1 hour'
ORDER BY a.at;

INSERT INTO webhook_attempts (event_id, attempted_at, status_code, duration_ms, error, response_excerpt)
SELECT e.id, e.created_at + k * interval '1 minute', CASE WHEN e.publish_status = 'failed' THEN 500 ELSE 200 END,
       40 + (abs(hashtext(e.id::text)) % 400), NULL, CASE WHEN e.publish_status = 'failed' THEN 'internal error' ELSE 'ok' END
FROM events e CROSS JOIN LATERAL generate_series(1, e.attempts) k
ORDER BY e.created_at;

\echo '  fills, payouts, revenue'
-- Hourly fills of every transaction sold (filled 40 minutes after creation).
CREATE TEMPORARY TABLE scale_filled AS
SELECT t.id, t.address_index, t.fiat_amount, t.crypto_amount, t.rate, t.created_at + interval '40 minutes' AS filled_at,
       date_trunc('hour', t.created_at + interval '40 minutes') AS hour
FROM transactions t WHERE t.status IN ('order_filled', 'completed');
INSERT INTO operator_batches (id, kind, partner_id, reference, rate, fiat_amount, crypto_amount, operator_id, created_at)
SELECT md5('fill' || hour)::uuid, 'fill', NULL, 'FILL-' || to_char(hour, 'YYYYMMDDHH24'), round(avg(rate), 2),
       sum(fiat_amount), sum(crypto_amount), (SELECT id FROM scale_operator WHERE idx = 1), max(filled_at)
FROM scale_filled GROUP BY hour;
INSERT INTO operator_batch_items (batch_id, kind, transaction_id, position)
SELECT md5('fill' || hour)::uuid, 'fill', id, row_number() OVER (PARTITION BY hour ORDER BY address_index) - 1 FROM scale_filled;
INSERT INTO order_fills (transaction_id, rate, fiat_amount, reference, operator_id, filled_at)
SELECT id, rate, fiat_amount, 'FILL-' || to_char(hour, 'YYYYMMDDHH24'), (SELECT id FROM scale_operator WHERE idx = 1), filled_at
FROM scale_filled;

-- Daily payouts per partner of the completed transactions.
CREATE TEMPORARY TABLE scale_paid AS
SELECT t.id, t.partner_id, t.fiat_amount, t.crypto_amount, t.address_index, t.payout_settled_at,
       md5('payout' || t.partner_id || date_trunc('day', t.payout_settled_at))::uuid AS batch_id
FROM transactions t WHERE t.payout_settled_at IS NOT NULL;
INSERT INTO operator_batches (id, kind, partner_id, reference, rate, fiat_amount, crypto_amount, operator_id, created_at)
SELECT batch_id, 'payout', partner_id, 'NIP-' || partner_id || '-' || to_char(min(payout_settled_at), 'YYYYMMDD'), NULL,
       sum(fiat_amount), sum(crypto_amount), (SELECT id FROM scale_operator WHERE idx = 2), max(payout_settled_at)
FROM scale_paid GROUP BY batch_id, partner_id;
INSERT INTO operator_batch_items (batch_id, kind, transaction_id, position)
SELECT batch_id, 'payout', id, row_number() OVER (PARTITION BY batch_id ORDER BY address_index) - 1 FROM scale_paid;

INSERT INTO revenue (transaction_id, partner_id, merchant_reference, merchant_id, terminal_id, network, crypto_currency,
        crypto_amount, amount, platform_fee, share, ts, shortfall)
SELECT id, partner_id, merchant_reference, merchant_id, terminal_id, network, crypto_currency, crypto_amount, fiat_amount,
       round(fiat_amount * 0.01, 2), round(fiat_amount * 0.005, 2), created_at + interval '50 minutes', 0
FROM transactions WHERE status = 'completed'
ORDER BY created_at;

\echo '  audit'
INSERT INTO operator_audit (id, operator_id, action, transaction_id, batch_id, reference, created_at, actor)
SELECT md5('audit-fill' || f.id)::uuid, (SELECT id FROM scale_operator WHERE idx = 1), 'batch_fill', f.id, md5('fill' || f.hour)::uuid,
       'FILL-' || to_char(f.hour, 'YYYYMMDDHH24'), f.filled_at, 'operator'
FROM scale_filled f
UNION ALL
SELECT md5('audit-settle' || t.id)::uuid, o.id, 'settle', t.id, NULL, NULL, t.created_at + interval '50 minutes', 'operator'
FROM transactions t JOIN scale_operator o ON o.idx = t.address_index % 5 WHERE t.status = 'completed'
UNION ALL
SELECT md5('audit-payout' || p.id)::uuid, (SELECT id FROM scale_operator WHERE idx = 2), 'batch_payout', p.id, p.batch_id,
       'NIP-' || p.partner_id, p.payout_settled_at, 'operator'
FROM scale_paid p
UNION ALL
SELECT md5('audit-refund' || t.id)::uuid, o.id, 'refund', t.id, NULL, '0x' || md5('refund' || t.id), t.created_at + interval '2 hours', 'operator'
FROM transactions t JOIN scale_operator o ON o.idx = t.address_index % 5 WHERE t.status = 'refunded';

-- New transactions take the next address indexes.
SELECT setval('address_index_bep20', :n + 1), setval('address_index_trc20', :n + 1) \g /dev/null
UPDATE address_counters SET next_index = :n + 1;

\echo '  keys and indexes'
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT stmt FROM scale_ddl ORDER BY ord LOOP EXECUTE r.stmt; END LOOP;
END $$;
DROP TABLE scale_ddl;
