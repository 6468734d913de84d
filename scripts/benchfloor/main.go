// Command benchfloor is the floor scripts/bench.sh measures partnerd against: the
// least a Go HTTP server with pgx can do for the same rows. It serves two routes
// on partnerd's own database (migrated by partnerd first):
//
//   - POST /api/v1/partner/transactions reads the body and ignores it, then
//     writes what partnerd's create writes (the transaction, its status-history
//     entry and its transaction.created event, the same columns) in one pgx
//     transaction, one statement each, and answers 201 with the row as JSON;
//   - GET /api/v1/partner/transactions/{id} reads the row by id and partner with
//     the columns of partnerd's read (the same query, deposit joined) and answers
//     200 with it as JSON.
//
// No authentication, validation, idempotency, rate limit, logging, metrics or
// tracing: what partnerd's throughput lacks of the floor's is what those cost,
// and what the floor lacks of pgbench's is what Go, HTTP and pgx cost.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	pgxdecimal "github.com/jackc/pgx-shopspring-decimal"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"
)

// network is the one network the floor's transactions are on; their address
// indexes are values of partnerd's sequence of it (the sequence's value is the
// index, as partnerd takes it), so they never collide with partnerd's own in the
// same database.
const network = "bep20"

// The amounts of every transaction the floor creates: what benchapi asks for
// (25,000 in fiat), at a fixed rate.
var (
	fiatAmount   = decimal.RequireFromString("25000.00")
	rate         = decimal.RequireFromString("1000.00")
	cryptoAmount = decimal.RequireFromString("25.000000")
)

const insertTransaction = `INSERT INTO transactions (id, partner_id, merchant_reference, reference_key,
	merchant_id, terminal_id, seller_phone, crypto_currency, network, crypto_amount, fiat_amount, rate, quote_id,
	deposit_address, address_index, status, created_at, updated_at, expires_at, version)
	VALUES ($1, $2, $3, $4, NULL, NULL, NULL, $5, $6, $7, $8, $9, NULL, $10, nextval('address_index_` + network + `'),
	$11, $12, $12, $13, 0)`

const insertHistory = `INSERT INTO status_history (transaction_id, from_status, to_status, reason, metadata, changed_at)
	VALUES ($1, NULL, $2, 'transaction:created', NULL, $3)`

const insertEvent = `INSERT INTO events (id, partner_id, transaction_id, type, payload, created_at)
	VALUES ($1, $2, $3, 'transaction.created', $4, $5)`

// selectTransaction is partnerd's read by id (store.TransactionByID).
const selectTransaction = `SELECT t.id, t.partner_id, t.merchant_reference, t.reference_key, t.merchant_id,
	t.terminal_id, t.seller_phone, t.crypto_currency, t.network, t.crypto_amount, t.fiat_amount, t.rate, t.quote_id,
	t.deposit_address, t.address_index, t.status, t.created_at, t.updated_at, t.expires_at, t.payout_settled_at,
	t.version, t.screening, d.deposit_id, d.status, d.confirmations, d.required_confirmations, d.chain_hash, d.amount,
	d.received_at, d.confirmed_at
	FROM transactions AS t LEFT JOIN deposits d ON d.transaction_id = t.id WHERE t.id = $1 AND t.partner_id = $2 LIMIT 1`

// transaction is the row both routes answer with, as partnerd's read returns it.
type transaction struct {
	ID                uuid.UUID       `json:"id"`
	PartnerID         uuid.UUID       `json:"partner_id"`
	MerchantReference string          `json:"merchant_reference"`
	ReferenceKey      string          `json:"-"`
	MerchantID        *string         `json:"merchant_id"`
	TerminalID        *string         `json:"terminal_id"`
	SellerPhone       *string         `json:"seller_phone"`
	CryptoCurrency    string          `json:"crypto_currency"`
	Network           string          `json:"network"`
	CryptoAmount      decimal.Decimal `json:"crypto_amount"`
	FiatAmount        decimal.Decimal `json:"fiat_amount"`
	Rate              decimal.Decimal `json:"rate"`
	QuoteID           *uuid.UUID      `json:"quote_id"`
	DepositAddress    string          `json:"deposit_address"`
	AddressIndex      int64           `json:"-"`
	Status            string          `json:"status"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
	ExpiresAt         time.Time       `json:"expires_at"`
	PayoutSettledAt   *time.Time      `json:"payout_settled_at"`
	Version           int64           `json:"-"`
	Screening         string          `json:"screening"`
	Deposit           *deposit        `json:"deposit"`
}

// deposit is the joined deposit's columns, all null when there is none.
type deposit struct {
	DepositID             *string             `json:"deposit_id"`
	Status                *string             `json:"status"`
	Confirmations         *int64              `json:"confirmations"`
	RequiredConfirmations *int64              `json:"required_confirmations"`
	ChainHash             *string             `json:"chain_hash"`
	Amount                decimal.NullDecimal `json:"amount"`
	ReceivedAt            *time.Time          `json:"received_at"`
	ConfirmedAt           *time.Time          `json:"confirmed_at"`
}

// envelope is partnerd's answer shape ({"data": …, "success": true}), which
// benchapi reads the created id from.
type envelope struct {
	Data    *transaction `json:"data"`
	Success bool         `json:"success"`
}

// payload is the created event's body, as partnerd's outbox stores it.
type payload struct {
	ID        uuid.UUID    `json:"id"`
	Type      string       `json:"type"`
	CreatedAt time.Time    `json:"created_at"`
	Data      *transaction `json:"data"`
}

type server struct {
	db      *pgxpool.Pool
	partner uuid.UUID
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	partnerFlag := flag.String("partner", "", "partner id of the transactions (default: the database's only partner)")
	flag.Parse()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		log.Fatal("benchfloor: DATABASE_URL is required")
	}
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		log.Fatalf("benchfloor: DATABASE_URL: %v", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = 20 // partnerd's default pool (dburl.DefaultPoolSize)
	}
	// Amounts and ids go in binary, as partnerd sends them (store.registerTypes).
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		pgxdecimal.Register(c.TypeMap())
		pgxuuid.Register(c.TypeMap())
		return nil
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatalf("benchfloor: %v", err)
	}
	defer db.Close()
	s := &server{db: db}
	if s.partner, err = partnerID(ctx, db, *partnerFlag); err != nil {
		log.Fatalf("benchfloor: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/partner/transactions", s.create)
	mux.HandleFunc("GET /api/v1/partner/transactions/{id}", s.get)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// partnerID is flagValue when set, else the id of the only row of partners.
func partnerID(ctx context.Context, db *pgxpool.Pool, flagValue string) (uuid.UUID, error) {
	if flagValue != "" {
		return uuid.Parse(flagValue)
	}
	rows, err := db.Query(ctx, "SELECT id FROM partners LIMIT 2")
	if err != nil {
		return uuid.Nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return uuid.Nil, err
	}
	if len(ids) != 1 {
		return uuid.Nil, errors.New("want exactly one partner in the database, or -partner")
	}
	return ids[0], nil
}

func (s *server) create(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now().UTC()
	ref := uuid.NewString()
	t := &transaction{
		ID: uuid.New(), PartnerID: s.partner, MerchantReference: ref, ReferenceKey: ref,
		CryptoCurrency: "usdt", Network: network, CryptoAmount: cryptoAmount, FiatAmount: fiatAmount, Rate: rate,
		Status: "awaiting_deposit", CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(30 * time.Minute),
	}
	t.DepositAddress = "0x" + hex.EncodeToString(t.ID[:]) + hex.EncodeToString(s.partner[:4])
	eventID := uuid.New()
	body, err := json.Marshal(payload{ID: eventID, Type: "transaction.created", CreatedAt: now, Data: t})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	err = pgx.BeginFunc(r.Context(), s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(r.Context(), insertTransaction, t.ID, t.PartnerID, t.MerchantReference, t.ReferenceKey,
			t.CryptoCurrency, t.Network, t.CryptoAmount, t.FiatAmount, t.Rate, t.DepositAddress,
			t.Status, now, t.ExpiresAt); err != nil {
			return err
		}
		if _, err := tx.Exec(r.Context(), insertHistory, t.ID, t.Status, now); err != nil {
			return err
		}
		_, err := tx.Exec(r.Context(), insertEvent, eventID, t.PartnerID, t.ID, string(body), now)
		return err
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	reply(w, http.StatusCreated, t)
}

func (s *server) get(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	var t transaction
	var d deposit
	err = s.db.QueryRow(r.Context(), selectTransaction, id, s.partner).Scan(
		&t.ID, &t.PartnerID, &t.MerchantReference, &t.ReferenceKey, &t.MerchantID, &t.TerminalID, &t.SellerPhone,
		&t.CryptoCurrency, &t.Network, &t.CryptoAmount, &t.FiatAmount, &t.Rate, &t.QuoteID, &t.DepositAddress,
		&t.AddressIndex, &t.Status, &t.CreatedAt, &t.UpdatedAt, &t.ExpiresAt, &t.PayoutSettledAt, &t.Version, &t.Screening,
		&d.DepositID, &d.Status, &d.Confirmations, &d.RequiredConfirmations, &d.ChainHash, &d.Amount,
		&d.ReceivedAt, &d.ConfirmedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		http.Error(w, "not found", http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if d.DepositID != nil {
		t.Deposit = &d
	}
	reply(w, http.StatusOK, &t)
}

// reply writes t in partnerd's envelope with status.
func reply(w http.ResponseWriter, status int, t *transaction) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(envelope{Data: t, Success: true})
}
