// Package paymentcases_test runs the payment rules (lifecycle/payments.go) end to
// end, each case twice: against a real chain (go-ethereum's simulated backend over
// JSON-RPC, the scanner watching it) and through the sandbox simulator, on both
// databases, through the generated clients. Both twins must give the partner the
// same statuses, history and events, and the operators the same refund tasks.
package paymentcases_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// TestMain drops the test databases. Every test runs in parallel with the others
// (each starts its own chain and service): they mostly wait for blocks, jobs and
// deadlines, so six at a time keep the CPU busy instead of idling between waits.
func TestMain(m *testing.M) {
	trustTestTLS()
	os.Exit(testdb.MainParallel(m, 6))
}

// trustTestTLS makes this process trust httptest's TLS servers (one built-in
// certificate), so the service run as production, which calls screening
// services over https only, can call one here.
func trustTestTLS() {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	f, err := os.CreateTemp("", "httptest-ca-*.pem")
	if err != nil {
		panic(err)
	}
	if err := pem.Encode(f, &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}); err != nil {
		panic(err)
	}
	_ = f.Close()
	if err := os.Setenv("SSL_CERT_FILE", f.Name()); err != nil {
		panic(err)
	}
}

const (
	network  = chain.BEP20
	required = 3
	decimals = 18
)

// env is one service watching one chain, with a partner and an operator.
type env struct {
	t      *testing.T
	chain  *devnet.Chain
	token  common.Address
	sender string
	api    *apitest.Env
	c      *client.ClientWithResponses
	ops    *operatorclient.ClientWithResponses
	// partner is the partner's id, to narrow the operators' lists to this test.
	partner uuid.UUID
}

func start(t *testing.T, db testdb.Database, extra map[string]string) *env {
	t.Helper()
	return startWith(t, db, func(_ *devnet.Chain, settings map[string]string) {
		for k, v := range extra {
			settings[k] = v
		}
	})
}

// startWith is start with the settings changed by set once the chain runs (a
// contract deployed on it, say).
func startWith(t *testing.T, db testdb.Database, set func(ch *devnet.Chain, settings map[string]string)) *env {
	t.Helper()
	ch, err := devnet.Start(0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	token, err := ch.Deploy(context.Background(), decimals)
	require.NoError(t, err)
	settings := map[string]string{
		"CHAIN_RPC_BEP20":        ch.URL,
		"CHAIN_ID_BEP20":         "1337", // the simulated node's
		"TOKEN_CONTRACTS":        fmt.Sprintf("usdt:%s=%s/%d", network, chain.FormatAddress(network, token), decimals),
		"CONFIRMATIONS":          fmt.Sprintf("bep20=%d,trc20=%d", required, required),
		"CHAIN_POLL_INTERVAL":    "50ms",
		"JOB_POLL_INTERVAL":      "50ms",
		"UNDERPAYMENT_TOLERANCE": "0.5%",
	}
	set(ch, settings)
	api := apitest.Start(t, db, settings)
	key, err := crypto.HexToECDSA(devnet.DevKey)
	require.NoError(t, err)
	partnerKey := api.NewPartner(t)
	return &env{
		t: t, chain: ch, token: token, sender: chain.FormatAddress(network, crypto.PubkeyToAddress(key.PublicKey)),
		api: api, c: api.Client(t, partnerKey), ops: api.OperatorClient(t, api.NewOperator(t)), partner: api.PartnerID(t, partnerKey),
	}
}

// payer makes transfers to a transaction: on chain or through the simulator.
type payer interface {
	name() string
	// pay sends amount tokens and returns the transaction once the service has seen it.
	pay(tx client.Transaction, amount string) client.TransactionDetail
	// confirm gives every transfer its confirmations and waits for want.
	confirm(tx client.Transaction, want client.TransactionStatus) client.TransactionDetail
}

type onChain struct{ e *env }

func (p onChain) name() string { return "chain" }

func (p onChain) pay(tx client.Transaction, amount string) client.TransactionDetail {
	e := p.e
	e.t.Helper()
	to, err := chain.ParseAddress(network, tx.DepositAddress)
	require.NoError(e.t, err)
	raw, err := devnet.Units(amount, decimals)
	require.NoError(e.t, err)
	_, err = e.chain.Transfer(context.Background(), e.token, to, raw)
	require.NoError(e.t, err)
	e.chain.Backend.Commit()
	e.scanned()
	return e.get(tx.Id)
}

func (p onChain) confirm(tx client.Transaction, want client.TransactionStatus) client.TransactionDetail {
	e := p.e
	e.t.Helper()
	for range required {
		e.chain.Backend.Commit()
	}
	return e.waitFor(tx.Id, want)
}

type simulated struct{ e *env }

func (p simulated) name() string { return "simulator" }

func (p simulated) pay(tx client.Transaction, amount string) client.TransactionDetail {
	p.e.t.Helper()
	res := p.e.simulate(client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: tx.Id, Amount: &amount})
	require.Equal(p.e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data
}

func (p simulated) confirm(tx client.Transaction, want client.TransactionStatus) client.TransactionDetail {
	p.e.t.Helper()
	res := p.e.simulate(client.SimulateRequest{Event: client.SimulateRequestEventDepositConfirmed, TransactionId: tx.Id})
	require.Equal(p.e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Equal(p.e.t, want, res.JSON200.Data.Status)
	return res.JSON200.Data
}

func (e *env) payers() []payer { return []payer{onChain{e}, simulated{e}} }

func (e *env) simulate(req client.SimulateRequest) *client.SimulateSandboxEventResponse {
	e.t.Helper()
	res, err := e.c.SimulateSandboxEventWithResponse(context.Background(), &client.SimulateSandboxEventParams{}, req)
	require.NoError(e.t, err)
	return res
}

func (e *env) event(tx client.Transaction, ev client.SimulateRequestEvent) client.TransactionDetail {
	e.t.Helper()
	res := e.simulate(client.SimulateRequest{Event: ev, TransactionId: tx.Id})
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data
}

func (e *env) create(fiat string) client.Transaction {
	e.t.Helper()
	res, err := e.c.CreateTransactionWithResponse(context.Background(), &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
		client.CreateTransactionRequest{MerchantReference: "PAY-" + uuid.NewString(), CryptoCurrency: "usdt", Network: network, FiatAmount: &fiat})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return res.JSON201.Data
}

func (e *env) get(id uuid.UUID) client.TransactionDetail {
	e.t.Helper()
	res, err := e.c.GetTransactionWithResponse(context.Background(), id)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data
}

func (e *env) waitFor(id uuid.UUID, want client.TransactionStatus) client.TransactionDetail {
	e.t.Helper()
	var d client.TransactionDetail
	require.Eventually(e.t, func() bool {
		d = e.get(id)
		return d.Status == want
	}, 30*time.Second, 20*time.Millisecond, "transaction %s never became %s", id, want)
	return d
}

// scanned waits until the scanner has processed the chain's head block.
func (e *env) scanned() {
	e.t.Helper()
	head, err := e.chain.Backend.Client().BlockNumber(context.Background())
	require.NoError(e.t, err)
	require.Eventually(e.t, func() bool {
		cur, err := e.api.Store.ChainCursor(context.Background(), network)
		require.NoError(e.t, err)
		return cur != nil && cur.Block >= head
	}, 30*time.Second, 20*time.Millisecond, "the scanner reaches block %d", head)
}

// story is what the partner saw of a transaction: history reasons and event types.
type story struct {
	Reasons []string
	Events  []string
}

func (e *env) story(id uuid.UUID) story {
	e.t.Helper()
	return story{Reasons: apitest.Reasons(apitest.History(e.t, e.c, id)), Events: e.api.EventTypes(e.t, id)}
}

func (e *env) meta(id uuid.UUID, reason string) map[string]any {
	e.t.Helper()
	for _, h := range apitest.History(e.t, e.c, id).History {
		if h.Reason == reason && h.Metadata != nil {
			return *h.Metadata
		}
	}
	return nil
}

// tasks lists the open refund tasks of kind for transaction id.
func (e *env) tasks(kind operatorclient.RefundTaskKind, id uuid.UUID) []operatorclient.RefundTask {
	e.t.Helper()
	res, err := e.ops.ListRefundTasksWithResponse(context.Background(), &operatorclient.ListRefundTasksParams{
		Kind: &kind, PartnerId: &e.partner, Network: ptr(network), Limit: ptr(100)})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	var out []operatorclient.RefundTask
	for _, task := range res.JSON200.Data.Data {
		if task.TransactionId != nil && *task.TransactionId == id {
			out = append(out, task)
		}
	}
	return out
}

// chainClockAt moves the simulated chain's clock forward so that its next blocks
// are no earlier than at (its blocks otherwise keep their own, slower time).
func (e *env) chainClockAt(at time.Time) {
	e.t.Helper()
	head, err := e.chain.Backend.Client().HeaderByNumber(context.Background(), nil)
	require.NoError(e.t, err)
	if behind := at.Sub(time.Unix(int64(head.Time), 0)); behind > 0 {
		require.NoError(e.t, e.chain.Backend.AdjustTime(behind))
	}
}

func ptr[T any](v T) *T { return &v }

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// twins runs fn for a chain payer and a simulator payer on both databases and
// checks that the twins told the same story.
func twins(t *testing.T, extra map[string]string, fn func(t *testing.T, e *env, p payer) uuid.UUID) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db, extra)
			var stories []story
			for _, p := range e.payers() {
				id := fn(t, e, p)
				stories = append(stories, e.story(id))
			}
			require.Equal(t, stories[0], stories[1], "the simulator tells the chain's story")
		})
	}
}

// A test amount first, then the rest: two deposits, two deposit.detected, and the
// transaction proceeds as if paid at once.
func TestTestThenRest(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		tx := e.create("31000")
		due := dec(tx.CryptoAmount)
		d := p.pay(tx, "1")
		require.Equal(t, client.TransactionStatusAwaitingDeposit, d.Status, p.name())
		require.Equal(t, "partial", *d.DepositStatus)
		require.Equal(t, "1.000000", *d.DepositAmount)
		require.Len(t, d.Deposits, 1)

		d = p.pay(tx, due.Sub(dec("1")).String())
		require.Equal(t, client.TransactionStatusDepositConfirming, d.Status, p.name())
		require.Equal(t, "confirming", *d.DepositStatus)
		require.Equal(t, tx.CryptoAmount, *d.DepositAmount)
		require.Len(t, d.Deposits, 2)
		require.Equal(t, d.Deposits[1].TxHash, *d.DepositTxHash, "deposit_tx_hash is the latest transfer's")
		require.Equal(t, d.Deposits[0].Id, *d.DepositId, "deposit_id is the first transfer's")
		require.NotEqual(t, d.Deposits[0].Id, d.Deposits[1].Id)

		d = p.confirm(tx, client.TransactionStatusOrderFilled)
		require.Equal(t, "confirmed", *d.DepositStatus)
		for _, dep := range d.Deposits {
			require.GreaterOrEqual(t, dep.Confirmations, required)
			require.NotNil(t, dep.ConfirmedAt)
		}
		require.Equal(t, story{
			Reasons: []string{"transaction:created", "deposit:partial", "deposit:detected", "deposit:confirmed", "order:filled"},
			Events:  []string{"transaction.created", "deposit.detected", "deposit.detected", "deposit.confirmed"},
		}, e.story(tx.Id), p.name())
		require.Equal(t, "1", e.meta(tx.Id, "deposit:partial")["received"])
		return tx.Id
	})
}

// Short by an exchange's fee, within the 0.5 % tolerance: paid in full, the
// shortfall in the history and the revenue row, the NGN amount unchanged.
func TestFeeShortWithinTolerance(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		tx := e.create("31000")
		shortfall := dec(tx.CryptoAmount).Mul(dec("0.004")).RoundDown(6) // 0.4 %
		d := p.pay(tx, dec(tx.CryptoAmount).Sub(shortfall).String())
		require.Equal(t, client.TransactionStatusDepositConfirming, d.Status, p.name())
		d = p.confirm(tx, client.TransactionStatusOrderFilled)
		require.Equal(t, tx.Amount, d.Amount, "the NGN amount is unchanged")
		require.Equal(t, shortfall.String(), e.meta(tx.Id, "deposit:confirmed")["shortfall"])
		e.event(tx, client.SimulateRequestEventTransactionCompleted)

		var recorded decimal.Decimal
		require.NoError(t, e.api.Store.SQL().QueryRowContext(context.Background(),
			"SELECT shortfall FROM revenue WHERE transaction_id = $1", tx.Id.String()).Scan(&recorded))
		require.True(t, shortfall.Equal(recorded), "revenue shortfall %s, want %s", recorded, shortfall)
		return tx.Id
	})
}

// Short beyond the tolerance: partial until the deadline, then expired/underpaid
// with a short refund task; the operator accepts it, the NGN amount is re-priced
// and the transaction completes.
func TestShortAtExpiryThenAccepted(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		ctx := context.Background()
		tx := e.create("31000")
		paid := dec(tx.CryptoAmount).Sub(dec("5"))
		d := p.pay(tx, paid.String())
		require.Equal(t, client.TransactionStatusAwaitingDeposit, d.Status, p.name())
		require.Equal(t, "partial", *d.DepositStatus)

		d = e.event(tx, client.SimulateRequestEventTransactionExpired)
		require.Equal(t, client.TransactionStatusExpired, d.Status)
		require.Equal(t, "underpaid", *d.DepositStatus)
		short := e.tasks(operatorclient.Short, tx.Id)
		require.Len(t, short, 1)
		require.Equal(t, paid.StringFixed(6), short[0].Amount)
		require.Equal(t, e.partner, *short[0].PartnerId)
		require.Equal(t, d.Deposits[0].TxHash, short[0].TxHash)

		od, err := e.ops.GetOperatorTransactionWithResponse(ctx, tx.Id)
		require.NoError(t, err)
		require.Equal(t, []operatorclient.OperatorAction{operatorclient.OperatorActionAccept, operatorclient.OperatorActionRefund},
			od.JSON200.Data.AllowedActions, "expired short: accept or refund")
		res, err := e.ops.AcceptShortPaymentWithResponse(ctx, tx.Id, &operatorclient.AcceptShortPaymentParams{IdempotencyKey: uuid.NewString()},
			operatorclient.AcceptRequest{Reason: "merchant agreed"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		// Re-priced independently: tokens × rate, floored to the kobo.
		want := paid.Mul(dec(tx.Rate)).RoundFloor(2).StringFixed(2)
		require.Equal(t, want, res.JSON200.Data.Amount)
		require.Equal(t, paid.StringFixed(6), res.JSON200.Data.CryptoAmount)
		m := e.meta(tx.Id, "deposit:accepted")
		require.Equal(t, tx.Amount, m["old_amount"])
		require.Equal(t, want, m["new_amount"])
		require.Equal(t, "merchant agreed", m["reason"])
		require.NotEmpty(t, m["operator_id"])
		require.Empty(t, e.tasks(operatorclient.Short, tx.Id), "accepting closes the short task")
		// The audit log reads the accept (the contract lists it) and filters by it.
		au, err := e.ops.ListAuditWithResponse(ctx, &operatorclient.ListAuditParams{Action: ptrTo(operatorclient.AuditAction("accept")), TransactionId: &tx.Id})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, au.StatusCode(), string(au.Body))
		require.Len(t, au.JSON200.Data.Data, 1)
		require.Equal(t, "merchant agreed", *au.JSON200.Data.Data[0].Reference)
		bad, err := e.ops.ListAuditWithResponse(ctx, &operatorclient.ListAuditParams{Action: ptrTo(operatorclient.AuditAction("teleport"))})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode(), string(bad.Body))

		d = p.confirm(tx, client.TransactionStatusOrderFilled)
		require.Equal(t, want, d.Amount)
		d = e.event(tx, client.SimulateRequestEventTransactionCompleted)
		require.Equal(t, client.TransactionStatusCompleted, d.Status)
		require.Equal(t, story{
			Reasons: []string{"transaction:created", "deposit:partial", "system:expired", "deposit:accepted", "deposit:confirmed", "order:filled", "order:settled"},
			Events:  []string{"transaction.created", "deposit.detected", "transaction.expired", "deposit.confirmed", "transaction.completed"},
		}, e.story(tx.Id), p.name())

		// Accepting again is refused.
		again, err := e.ops.AcceptShortPaymentWithResponse(ctx, tx.Id, &operatorclient.AcceptShortPaymentParams{IdempotencyKey: uuid.NewString()},
			operatorclient.AcceptRequest{Reason: "again"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, again.StatusCode())
		return tx.Id
	})
}

// Dust counts for nothing and tells the partner nothing; the operators see it.
func TestDust(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		tx := e.create("31000")
		d := p.pay(tx, "0.5")
		require.Equal(t, client.TransactionStatusAwaitingDeposit, d.Status, p.name())
		require.Nil(t, d.DepositStatus)
		require.Empty(t, d.Deposits)
		dust := e.tasks(operatorclient.Dust, tx.Id)
		require.Len(t, dust, 1, p.name())
		require.Equal(t, "0.500000", dust[0].Amount)
		require.Equal(t, tx.DepositAddress, dust[0].ToAddress)
		require.Equal(t, story{Reasons: []string{"transaction:created"}, Events: []string{"transaction.created"}}, e.story(tx.Id))
		return tx.Id
	})
}

// An overpayment completes; the excess is a refund task, resolved once.
func TestOverpayment(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		ctx := context.Background()
		tx := e.create("31000")
		p.pay(tx, dec(tx.CryptoAmount).Add(dec("2.5")).String())
		d := p.confirm(tx, client.TransactionStatusOrderFilled)
		require.Equal(t, tx.Amount, d.Amount)
		require.Equal(t, "2.5", e.meta(tx.Id, "deposit:confirmed")["excess"])
		e.event(tx, client.SimulateRequestEventTransactionCompleted)

		excess := e.tasks(operatorclient.Excess, tx.Id)
		require.Len(t, excess, 1, p.name())
		require.Equal(t, "2.500000", excess[0].Amount)
		require.Equal(t, d.Deposits[0].TxHash, excess[0].TxHash)
		require.NotEmpty(t, excess[0].FromAddress)
		if p.name() == "chain" {
			require.Equal(t, e.sender, excess[0].FromAddress, "refunds go back to the sender")
		}

		hash := operatorclient.ChainHash("0x" + strings.Repeat("ef", 32))
		key := uuid.NewString()
		resolve := func(key string) *operatorclient.ResolveRefundTaskResponse {
			res, err := e.ops.ResolveRefundTaskWithResponse(ctx, excess[0].Id, &operatorclient.ResolveRefundTaskParams{IdempotencyKey: key},
				operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionRefunded, TxHash: &hash})
			require.NoError(t, err)
			return res
		}
		res := resolve(key)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, operatorclient.UnmatchedDepositStatusRefunded, res.JSON200.Data.Status)
		require.NotNil(t, res.JSON200.Data.ResolvedBy)
		require.Equal(t, "true", resolve(key).HTTPResponse.Header.Get("Idempotent-Replayed"), "a retry replays")
		require.Equal(t, http.StatusConflict, resolve(uuid.NewString()).StatusCode(), "resolved once")
		require.Empty(t, e.tasks(operatorclient.Excess, tx.Id))
		return tx.Id
	})
}

// A payment within the late window re-opens the expired transaction; one after it
// is unmatched and changes nothing.
func TestLatePayments(t *testing.T) {
	t.Parallel()
	const window = 5 * time.Second
	late := map[string]string{"DEPOSIT_WINDOW": "1s", "EXPIRY_SWEEP_INTERVAL": "100ms", "LATE_PAYMENT_WINDOW": window.String()}
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db, late)
			var inside, outside []story
			for _, p := range e.payers() {
				in, out := e.create("31000"), e.create("31000")
				e.waitFor(in.Id, client.TransactionStatusExpired)
				d := p.pay(in, in.CryptoAmount)
				require.Equal(t, client.TransactionStatusDepositConfirming, d.Status, p.name())
				inside = append(inside, e.story(in.Id))

				e.waitFor(out.Id, client.TransactionStatusExpired)
				time.Sleep(time.Until(out.ExpiresAt.Add(window + 500*time.Millisecond)))
				if p.name() == "chain" {
					// The window is measured by block time: the simulated chain's clock
					// is brought up to the service's first.
					e.chainClockAt(time.Now())
					d = p.pay(out, out.CryptoAmount)
					require.Equal(t, client.TransactionStatusExpired, d.Status)
					require.Nil(t, d.DepositStatus)
					un := e.tasks(operatorclient.Unmatched, out.Id)
					require.Len(t, un, 1)
					require.Equal(t, dec(out.CryptoAmount).StringFixed(6), un[0].Amount)
					// The unmatched view lists it too.
					list, err := e.ops.ListUnmatchedDepositsWithResponse(context.Background(), &operatorclient.ListUnmatchedDepositsParams{})
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
					found := false
					for _, u := range list.JSON200.Data.Data {
						found = found || u.Id == un[0].Id
					}
					require.True(t, found, "GET /deposits/unmatched keeps listing unmatched transfers")
				} else {
					amount := out.CryptoAmount
					res := e.simulate(client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: out.Id, Amount: &amount})
					require.Equal(t, http.StatusConflict, res.StatusCode(), string(res.Body))
					require.Contains(t, string(res.Body), "late-payment window")
				}
				outside = append(outside, e.story(out.Id))
			}
			require.Equal(t, story{
				Reasons: []string{"transaction:created", "system:expired", "deposit:detected"},
				Events:  []string{"transaction.created", "transaction.expired", "deposit.detected"},
			}, inside[0])
			require.Equal(t, inside[0], inside[1])
			require.Equal(t, story{
				Reasons: []string{"transaction:created", "system:expired"},
				Events:  []string{"transaction.created", "transaction.expired"},
			}, outside[0])
			require.Equal(t, outside[0], outside[1])
		})
	}
}

// The block of the transfer that completed a payment is reorganised away: that
// transfer no longer counts, and the transaction waits for the rest again with the
// test amount still counted.
func TestReorgOfTheCompletingTransfer(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := start(t, db, nil)
			p := onChain{e}
			tx := e.create("31000")
			p.pay(tx, "1")
			parent, err := e.chain.Backend.Client().HeaderByNumber(ctx, nil)
			require.NoError(t, err)
			d := p.pay(tx, dec(tx.CryptoAmount).Sub(dec("1")).String())
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status)
			rest := d.Deposits[1]

			_, err = e.chain.Replace(ctx, parent.Hash())
			require.NoError(t, err)
			d = e.waitFor(tx.Id, client.TransactionStatusAwaitingDeposit)
			require.Equal(t, "partial", *d.DepositStatus)
			require.Equal(t, "1.000000", *d.DepositAmount)
			require.Len(t, d.Deposits, 1)
			require.Equal(t, *d.DepositTxHash, d.Deposits[0].TxHash, "the hash of the transfer that still counts")
			require.Equal(t, []string{"transaction:created", "deposit:partial", "deposit:detected", "deposit:reorged"}, e.story(tx.Id).Reasons)
			require.Equal(t, rest.Id, e.meta(tx.Id, "deposit:reorged")["deposit_id"])
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
