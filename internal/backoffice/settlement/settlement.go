// Package settlement keeps partners' settlement accounts: the bank account each
// partner's payouts go to. An operator sets one (PUT
// /partners/{id}/settlement-account); before it is stored the transfer provider
// (Paystack) is asked whether the bank code is one it knows and whose the account
// is (name enquiry), and the holder's name is compared with the partner's, so a
// mistyped account number or someone else's account is caught before money
// leaves. The provider is called outside any database transaction; the account
// and its audit row are then written in one unit of work.
package settlement

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/google/uuid"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partners"
	"partnerd/internal/payout/paystack"
)

// BanksTTL is how long the provider's bank list is kept.
const BanksTTL = time.Hour

// Account is a partner's settlement account.
type Account struct {
	PartnerID uuid.UUID
	// PartnerName is the partner's name, read with the account (not stored with it).
	PartnerName   string
	BankCode      string
	BankName      string
	AccountNumber string
	// AccountName is the holder's name the bank gave (name enquiry).
	AccountName string
	// NameMatches is false when an operator confirmed the account despite its
	// holder's name differing from the partner's.
	NameMatches bool
	VerifiedAt  time.Time
	SetBy       uuid.UUID
	UpdatedAt   time.Time
}

// Provider lists banks and resolves accounts (paystack.Client).
type Provider interface {
	Banks(ctx context.Context) ([]paystack.Bank, error)
	Resolve(ctx context.Context, bankCode, accountNumber string) (*paystack.Account, error)
}

// Tx is the unit of work that sets an account (store.Tx).
type Tx interface {
	audit.Tx
	idempotency.Keeper
	// PartnerByID returns partner id, or apperr NotFound.
	PartnerByID(ctx context.Context, id uuid.UUID) (*partners.Partner, error)
	// PutSettlementAccount inserts or replaces a's partner's account.
	PutSettlementAccount(ctx context.Context, a *Account) error
}

// Store reads accounts outside any unit of work.
type Store interface {
	// SettlementAccount returns partner's account with the partner's name, or
	// apperr NotFound.
	SettlementAccount(ctx context.Context, partner uuid.UUID) (*Account, error)
	// PartnerByID returns partner id, or apperr NotFound.
	PartnerByID(ctx context.Context, id uuid.UUID) (*partners.Partner, error)
}

// Deps are what the service needs. Provider nil: no provider is configured
// (listing banks and setting an account are ServiceUnavailable). Audit may be nil.
type Deps struct {
	Provider Provider
	Store    Store
	Begin    uow.Begin[Tx]
	Audit    *audit.Log
	Now      func() time.Time
	Logger   *slog.Logger
}

// Service lists banks and reads and sets settlement accounts.
type Service struct {
	d Deps

	mu      sync.Mutex
	banks   []paystack.Bank
	banksAt time.Time
}

// New returns the service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Service{d: d}
}

// errNoProvider is the answer without PAYSTACK_SECRET_KEY.
func errNoProvider() error {
	return apperr.New(apperr.ServiceUnavailable,
		"No transfer provider is configured (PAYSTACK_SECRET_KEY is not set): banks cannot be listed nor settlement accounts verified.")
}

// Banks returns the provider's banks, kept for BanksTTL.
func (s *Service) Banks(ctx context.Context) ([]paystack.Bank, error) {
	if s.d.Provider == nil {
		return nil, errNoProvider()
	}
	s.mu.Lock()
	if s.banks != nil && s.d.Now().Sub(s.banksAt) < BanksTTL {
		b := s.banks
		s.mu.Unlock()
		return b, nil
	}
	s.mu.Unlock()
	b, err := s.d.Provider.Banks(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.banks, s.banksAt = b, s.d.Now()
	s.mu.Unlock()
	return b, nil
}

// Get returns partner's account, or apperr NotFound.
func (s *Service) Get(ctx context.Context, partner uuid.UUID) (*Account, error) {
	if _, err := s.d.Store.PartnerByID(ctx, partner); err != nil {
		return nil, err
	}
	return s.d.Store.SettlementAccount(ctx, partner)
}

// Request is an account to set.
type Request struct {
	BankCode      string
	AccountNumber string
	// ConfirmName sets the account although its holder's name is not the partner's.
	ConfirmName bool
}

// Set verifies r with the provider and stores it as partner's account, audited
// as settlement_account_set, in one unit of work run by run. Errors: NotFound
// (partner), InvalidRequest on /bank_code (not in the list), /account_number (not
// resolved) or /confirm_name (the names differ, not confirmed), ServiceUnavailable
// (no provider, or it cannot answer); nothing is stored on any of them.
func (s *Service) Set(ctx context.Context, run uow.Runner[*Account, Tx], by actor.Actor, partner uuid.UUID, r Request) (*Account, error) {
	if s.d.Provider == nil {
		return nil, errNoProvider()
	}
	p, err := s.d.Store.PartnerByID(ctx, partner)
	if err != nil {
		return nil, err
	}
	banks, err := s.Banks(ctx)
	if err != nil {
		return nil, err
	}
	var bank *paystack.Bank
	for i := range banks {
		if banks[i].Code == r.BankCode {
			bank = &banks[i]
			break
		}
	}
	if bank == nil {
		return nil, apperr.Field(apperr.InvalidRequest, fmt.Sprintf("Bank code %q is not in the bank list (GET /banks).", r.BankCode),
			"/bank_code", "is not a bank of GET /banks")
	}
	// Name enquiry, outside any database transaction.
	resolved, err := s.d.Provider.Resolve(ctx, r.BankCode, r.AccountNumber)
	if err != nil {
		return nil, err
	}
	verified := s.d.Now()
	matches := NamesMatch(resolved.Name, p.Name)
	if !matches && !r.ConfirmName {
		return nil, apperr.Field(apperr.InvalidRequest,
			fmt.Sprintf("The account's holder is %q, not the partner %q: send confirm_name true once the account is known to be right.", resolved.Name, p.Name),
			"/confirm_name", "must be true to set an account whose holder's name differs from the partner's")
	}
	a, err := run.Run(ctx, s.d.Begin, func(ctx context.Context, tx Tx) (*Account, error) {
		p, err := tx.PartnerByID(ctx, partner)
		if err != nil {
			return nil, err
		}
		a := &Account{PartnerID: p.ID, PartnerName: p.Name, BankCode: bank.Code, BankName: bank.Name, AccountNumber: r.AccountNumber,
			AccountName: resolved.Name, NameMatches: matches, VerifiedAt: verified, SetBy: by.OperatorID(), UpdatedAt: s.d.Now()}
		if err := tx.PutSettlementAccount(ctx, a); err != nil {
			return nil, err
		}
		if s.d.Audit != nil {
			ref := a.BankCode + " …" + last4(a.AccountNumber)
			if err := s.d.Audit.Record(ctx, tx, by, audit.Entry{Action: audit.SettlementAccountSet, SubjectID: &a.PartnerID, Reference: &ref}); err != nil {
				return nil, err
			}
		}
		return a, nil
	})
	if err != nil {
		return nil, err
	}
	s.d.Logger.InfoContext(ctx, "operator action", "action", string(audit.SettlementAccountSet), "operator_id", by.OperatorID().String(),
		"subject_id", partner.String(), "bank_code", a.BankCode, "name_matches", a.NameMatches)
	return a, nil
}

func last4(s string) string {
	if len(s) <= 4 {
		return s
	}
	return s[len(s)-4:]
}

// companySuffixes are left out of names compared.
var companySuffixes = map[string]bool{"ltd": true, "limited": true, "plc": true, "nig": true, "nigeria": true}

// NormalName is name as NamesMatch compares it: letter case, punctuation and
// whitespace ignored (lower case letters and digits only) and company suffixes
// (ltd, limited, plc, nig, nigeria, as the last words) left out: "Acme Trading
// (Nig.) Ltd." and "ACME TRADING" are both "acmetrading".
func NormalName(name string) string {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for len(words) > 1 && companySuffixes[words[len(words)-1]] {
		words = words[:len(words)-1]
	}
	return strings.Join(words, "")
}

// NamesMatch reports whether the holder's name a bank gave is the partner's name
// (NormalName of each equal, and not empty).
func NamesMatch(accountName, partnerName string) bool {
	a, p := NormalName(accountName), NormalName(partnerName)
	return a != "" && a == p
}
