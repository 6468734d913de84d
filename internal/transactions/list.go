package transactions

import (
	"context"
	"encoding/hex"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/address"
	"partnerd/internal/kit/csvexport"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/money"
)

// Filter selects transactions; zero fields select everything.
type Filter struct {
	Statuses   []lifecycle.Status
	MerchantID *string
	TerminalID *string
	// Reference matches the merchant reference case-insensitively.
	Reference *string
	// DepositAddress matches the address issued to the transaction (EVM hex in
	// any letter case).
	DepositAddress *string
	// TxHash matches the chain hash of any of the deposit's transfers (hex in
	// any letter case).
	TxHash *string
	// Network matches the deposit network exactly.
	Network  *string
	From, To *time.Time
}

// ListQuery is what the store needs for one page.
type ListQuery struct {
	Filter
	// ReferenceKey is the folded Reference, when set.
	ReferenceKey *string
	// AddressKey is DepositAddress in its stored form, when set.
	AddressKey *string
	// HashKeys are the stored forms TxHash may have, when set.
	HashKeys []string
	// After is the position of the last item of the previous page, if any.
	After *cursor.Position
	// Limit is how many rows to return at most.
	Limit int
}

// Page is one page of the list.
type Page = cursor.Page[*lifecycle.Transaction]

// Lister pages through transactions.
type Lister struct {
	store Store
	codec *cursor.Codec
}

// NewLister returns a Lister signing cursors with codec.
func NewLister(store Store, codec *cursor.Codec) *Lister { return &Lister{store: store, codec: codec} }

// List returns one page of partnerID's transactions, newest first (created_at, id
// descending). after is the previous page's next cursor, or "". Errors:
// InvalidCursor when after does not verify for this partner and filter.
func (l *Lister) List(ctx context.Context, partnerID uuid.UUID, f Filter, limit int, after string) (*Page, error) {
	limit = cursor.Limit(limit)
	scope := scopeOf(partnerID, f)
	q := ListQuery{Filter: f, Limit: limit + 1}
	if f.Reference != nil {
		k := ReferenceKey(*f.Reference)
		q.ReferenceKey = &k
	}
	if f.DepositAddress != nil {
		k := address.Canonical(*f.DepositAddress)
		q.AddressKey = &k
	}
	if f.TxHash != nil {
		q.HashKeys = HashKeys(*f.TxHash)
	}
	var err error
	if q.After, err = l.codec.After(after, scope); err != nil {
		return nil, err
	}
	rows, err := l.store.ListTransactions(ctx, partnerID, q)
	if err != nil {
		return nil, err
	}
	p := &Page{Limit: limit}
	p.Items, p.HasMore, p.NextCursor = cursor.Trim(l.codec, scope, rows, limit, func(t *lifecycle.Transaction) cursor.Position {
		return cursor.Position{Time: t.CreatedAt, ID: t.ID.String()}
	})
	return p, nil
}

// scopeOf is the canonical text of a list's partner and filters that a cursor is
// bound to. JSON keeps it unambiguous whatever the filter values contain.
func scopeOf(partnerID uuid.UUID, f Filter) string {
	st := make([]string, len(f.Statuses))
	for i, s := range f.Statuses {
		st[i] = string(s)
	}
	sort.Strings(st)
	var ref, addr, hash *string
	if f.Reference != nil {
		k := ReferenceKey(*f.Reference)
		ref = &k
	}
	if f.DepositAddress != nil {
		k := address.Canonical(*f.DepositAddress)
		addr = &k
	}
	if f.TxHash != nil {
		k := HashKeys(*f.TxHash)[0]
		hash = &k
	}
	scope := cursor.Scope(struct {
		List       string     `json:"list"`
		Partner    uuid.UUID  `json:"partner"`
		Statuses   []string   `json:"status"`
		MerchantID *string    `json:"merchant_id"`
		TerminalID *string    `json:"terminal_id"`
		Reference  *string    `json:"reference"`
		Address    *string    `json:"deposit_address,omitempty"`
		Hash       *string    `json:"tx_hash,omitempty"`
		Network    *string    `json:"network,omitempty"`
		From       *time.Time `json:"from"`
		To         *time.Time `json:"to"`
	}{"transactions", partnerID, st, f.MerchantID, f.TerminalID, ref, addr, hash, f.Network, cursor.UTC(f.From), cursor.UTC(f.To)})
	return scope
}

// HashKeys are the stored forms a searched chain hash may have, the folded one
// first: hashes the service records from a chain are lower-case hex (0x-prefixed
// on EVM networks), so hex typed in upper case is folded; the text as typed is
// kept too, for a simulated deposit's hash, which is stored as it was given.
func HashKeys(h string) []string {
	folded := h
	digits := h
	if len(h) > 2 && (h[:2] == "0x" || h[:2] == "0X") {
		digits = h[2:]
	}
	if _, err := hex.DecodeString(digits); err == nil && len(digits)%2 == 0 {
		folded = strings.ToLower(h)
	}
	if folded == h {
		return []string{h}
	}
	return []string{folded, h}
}

// ExportColumns are the transactions export's columns (documented in the
// contract's GET /exports/transactions).
var ExportColumns = []string{"transaction_id", "merchant_reference", "merchant_id", "terminal_id", "status",
	"network", "crypto_currency", "crypto_amount", "amount", "rate", "deposit_address",
	"created_at", "updated_at", "expires_at", "payout_settled_at"}

// exportPage is how many transactions the export reads per query.
const exportPage = 500

// WriteCSV writes every transaction of partnerID created within from and to
// (both inclusive) to w as CSV, newest first, reading a page at a time so an
// export of any size streams.
func (l *Lister) WriteCSV(ctx context.Context, w io.Writer, partnerID uuid.UUID, from, to time.Time) error {
	out, err := csvexport.New(w, ExportColumns...)
	if err != nil {
		return err
	}
	q := ListQuery{Filter: Filter{From: &from, To: &to}, Limit: exportPage}
	for {
		page, err := l.store.ListTransactions(ctx, partnerID, q)
		if err != nil {
			return err
		}
		for _, t := range page {
			if err := out.Row(csvexport.Word(t.ID.String()), csvexport.Text(t.MerchantReference), csvexport.OptText(t.MerchantID),
				csvexport.OptText(t.TerminalID), csvexport.Word(string(t.Status)), csvexport.Word(t.Network), csvexport.Word(t.Token),
				csvexport.Amount(money.FormatTokens(t.CryptoAmount)), csvexport.Amount(money.FormatFiat(t.FiatAmount)),
				csvexport.Amount(money.FormatRate(t.Rate)), csvexport.Word(t.DepositAddress), csvexport.Time(t.CreatedAt),
				csvexport.Time(t.UpdatedAt), csvexport.Time(t.ExpiresAt), csvexport.OptTime(t.PayoutSettledAt)); err != nil {
				return err
			}
		}
		if len(page) < exportPage {
			return out.Close()
		}
		last := page[len(page)-1]
		q.After = &cursor.Position{Time: last.CreatedAt, ID: last.ID.String()}
	}
}
