// Package paystack is the small part of Paystack's API the service calls: the
// list of Nigerian banks and name enquiry (resolving an account number to its
// holder's name). A partner's settlement account is verified with them before
// payouts may go there: the bank code must be one Paystack knows, and the name
// the bank gives for the account is shown beside the partner's, so a mistyped
// account number is caught before money leaves.
//
// Only what that needs is here. The shapes follow Paystack's own OpenAPI
// document (testdata/paystack/openapi.yaml), and the tests hold the client to it
// through a fake that validates every request against the document
// (paystacktest). Every call is bounded by the client's timeout; Paystack
// refusing the key, failing (5xx) or not answering in time is apperr
// ServiceUnavailable, and an account it cannot resolve is apperr InvalidRequest
// on /account_number.
package paystack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"partnerd/internal/kit/apperr"
)

// DefaultBaseURL is Paystack's API (the document's server).
const DefaultBaseURL = "https://api.paystack.co"

// DefaultTimeout bounds each call when none is given.
const DefaultTimeout = 10 * time.Second

// maxPages bounds the bank list's pages (a provider answering next forever).
const maxPages = 50

// Bank is a bank of Paystack's list.
type Bank struct {
	Code string
	Name string
}

// Account is a resolved account: its number and its holder's name as the bank gave it.
type Account struct {
	Number string
	Name   string
}

// Client calls Paystack with a secret key.
type Client struct {
	base string
	key  string
	http *http.Client
}

// New returns a client of the API at baseURL (DefaultBaseURL when empty)
// authenticated by secretKey (Bearer), each call bounded by timeout
// (DefaultTimeout when zero).
func New(baseURL, secretKey string, timeout time.Duration) *Client {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), key: secretKey, http: &http.Client{Timeout: timeout}}
}

// bankRow is an item of the document's MiscellaneousListBanksResponse.
type bankRow struct {
	Name      string `json:"name"`
	Code      string `json:"code"`
	Active    bool   `json:"active"`
	IsDeleted *bool  `json:"is_deleted"`
}

// envelope is Paystack's answer: status, message, data and, on a cursor-paged
// list, meta.next.
type envelope struct {
	Status  bool            `json:"status"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
	Meta    *struct {
		Next *string `json:"next"`
	} `json:"meta"`
}

// Banks lists Paystack's Nigerian (NGN) banks, active and not deleted, each code
// once, in Paystack's order. The list is paged by cursor (use_cursor, perPage,
// next: the document's parameters), followed until meta.next is empty.
func (c *Client) Banks(ctx context.Context) ([]Bank, error) {
	var out []Bank
	seen := map[string]bool{}
	next := ""
	for page := 0; page < maxPages; page++ {
		q := url.Values{"country": {"nigeria"}, "currency": {"NGN"}, "use_cursor": {"true"}, "perPage": {"100"}}
		if next != "" {
			q.Set("next", next)
		}
		env, status, err := c.get(ctx, "/bank", q)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK || !env.Status {
			return nil, unavailable(fmt.Sprintf("Paystack did not list the banks (HTTP %d).", status))
		}
		var rows []bankRow
		if err := json.Unmarshal(env.Data, &rows); err != nil {
			return nil, unavailable("Paystack's bank list could not be read.")
		}
		for _, r := range rows {
			if !r.Active || (r.IsDeleted != nil && *r.IsDeleted) || r.Code == "" || seen[r.Code] {
				continue
			}
			seen[r.Code] = true
			out = append(out, Bank{Code: r.Code, Name: r.Name})
		}
		if env.Meta == nil || env.Meta.Next == nil || *env.Meta.Next == "" || *env.Meta.Next == next {
			return out, nil
		}
		next = *env.Meta.Next
	}
	return out, nil
}

// Resolve asks the bank (through Paystack) whose account accountNumber at
// bankCode is. Paystack answering that it cannot resolve it (a 4xx other than a
// refused key, with status false) is apperr InvalidRequest on /account_number.
func (c *Client) Resolve(ctx context.Context, bankCode, accountNumber string) (*Account, error) {
	env, status, err := c.get(ctx, "/bank/resolve", url.Values{"account_number": {accountNumber}, "bank_code": {bankCode}})
	if err != nil {
		return nil, err
	}
	switch {
	case status == http.StatusOK && env.Status:
		var d struct {
			AccountNumber string `json:"account_number"`
			AccountName   string `json:"account_name"`
		}
		if err := json.Unmarshal(env.Data, &d); err != nil || strings.TrimSpace(d.AccountName) == "" {
			return nil, unavailable("Paystack's name enquiry answer could not be read.")
		}
		n := d.AccountNumber
		if n == "" {
			n = accountNumber
		}
		return &Account{Number: n, Name: strings.TrimSpace(d.AccountName)}, nil
	case status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusUnprocessableEntity:
		return nil, apperr.Field(apperr.InvalidRequest,
			fmt.Sprintf("The bank could not resolve account %s (bank code %s): check the account number and the bank.", accountNumber, bankCode),
			"/account_number", "is not an account the bank knows")
	default:
		return nil, unavailable(fmt.Sprintf("Paystack's name enquiry failed (HTTP %d).", status))
	}
}

// get calls path with q and reads Paystack's envelope. A refused key (401, 403),
// a server error, a timeout or a broken connection is apperr ServiceUnavailable;
// other statuses are returned with the envelope for the caller to judge.
func (c *Client) get(ctx context.Context, path string, q url.Values) (*envelope, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, 0, ctx.Err()
		}
		return nil, 0, unavailable("Paystack did not answer in time; try again.")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, 0, unavailable("Paystack's answer was cut short; try again.")
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, resp.StatusCode, unavailable("Paystack refused the secret key (PAYSTACK_SECRET_KEY).")
	case resp.StatusCode >= 500:
		return nil, resp.StatusCode, unavailable(fmt.Sprintf("Paystack failed (HTTP %d); try again.", resp.StatusCode))
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, resp.StatusCode, unavailable(fmt.Sprintf("Paystack's answer (HTTP %d) could not be read.", resp.StatusCode))
	}
	return &env, resp.StatusCode, nil
}

func unavailable(msg string) error { return apperr.New(apperr.ServiceUnavailable, msg) }
