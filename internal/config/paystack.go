package config

import (
	"errors"
	"net/url"
	"time"

	"partnerd/internal/payout/paystack"
)

// Paystack is the transfer provider asked for the banks and for name enquiry
// (package paystack), when partners' settlement accounts are set.
type Paystack struct {
	// BaseURL is PAYSTACK_BASE_URL (default paystack.DefaultBaseURL).
	BaseURL string
	// SecretKey is PAYSTACK_SECRET_KEY, sent as a Bearer token; empty: no provider,
	// and listing banks or setting a settlement account is 503.
	SecretKey string
	// Timeout is PAYSTACK_TIMEOUT: the bound of each call.
	Timeout time.Duration
}

// On reports whether the provider's key is set.
func (p Paystack) On() bool { return p.SecretKey != "" }

// paystack reads the PAYSTACK_* settings.
func (r *reader) paystack(c *Config) {
	get, bad := r.get, r.bad
	p := Paystack{BaseURL: get("PAYSTACK_BASE_URL", paystack.DefaultBaseURL), SecretKey: get("PAYSTACK_SECRET_KEY", "")}
	if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		bad("PAYSTACK_BASE_URL", errors.New("want Paystack's API base URL, e.g. https://api.paystack.co"))
	} else if c.Env == Production && u.Scheme != "https" {
		bad("PAYSTACK_BASE_URL", errors.New("production calls Paystack over https only"))
	}
	p.Timeout = duration(get("PAYSTACK_TIMEOUT", paystack.DefaultTimeout.String()), "PAYSTACK_TIMEOUT", bad)
	if p.Timeout <= 0 {
		bad("PAYSTACK_TIMEOUT", errors.New("want a positive duration, e.g. 10s"))
	}
	c.Paystack = p
}
