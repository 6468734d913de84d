package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"partnerd/internal/screening"
)

// Screening is the screening of deposits' senders (package screening).
type Screening struct {
	// Kinds are the screeners of SCREENING (list, oracle, api); empty when off.
	Kinds []string
	// Off is SCREENING=off, written out (production refuses to start without
	// SCREENING).
	Off bool
	// Oracles are SCREENING_ORACLE_<NETWORK>: the sanctions oracle contract on
	// each EVM network, asked through that network's chain providers.
	Oracles map[string]common.Address
	// APIURL and APIKey are SCREENING_API_URL and SCREENING_API_KEY.
	APIURL, APIKey string
	// FailOpen is SCREENING_FAIL_OPEN (staging only): an unknown answer proceeds.
	FailOpen bool
	// Retry is SCREENING_RETRY_INTERVAL: the wait before asking again.
	Retry time.Duration
}

// On reports whether any screener is configured.
func (s Screening) On() bool { return len(s.Kinds) > 0 }

// Has reports whether kind is configured.
func (s Screening) Has(kind string) bool { return slices.Contains(s.Kinds, kind) }

// screening reads SCREENING and its screeners' settings. Staging screens against
// the imported lists (with the embedded sample) unless told otherwise.
func (r *reader) screening(c *Config) {
	get, bad := r.get, r.bad
	def := "list"
	if c.Env == Production {
		def = ""
	}
	v := get("SCREENING", def)
	kinds, off, err := screening.ParseSetting(v)
	switch {
	case err != nil && v == "":
		bad("SCREENING", errors.New("production refuses to start without screening: set SCREENING to list, oracle and/or api (comma-separated), or write out SCREENING=off"))
	case err != nil:
		bad("SCREENING", err)
	}
	c.Screening = Screening{Kinds: kinds, Off: off, Oracles: map[string]common.Address{}}
	s := &c.Screening
	s.Retry = duration(get("SCREENING_RETRY_INTERVAL", screening.DefaultRetry.String()), "SCREENING_RETRY_INTERVAL", bad)
	switch fo := get("SCREENING_FAIL_OPEN", "false"); fo {
	case "true":
		s.FailOpen = true
		if c.Env == Production {
			bad("SCREENING_FAIL_OPEN", errors.New("production fails closed: a screener that cannot answer holds the money; unset it"))
		}
	case "false":
	default:
		bad("SCREENING_FAIL_OPEN", fmt.Errorf("%q: want true or false", fo))
	}
	for _, n := range []string{"bep20", "trc20"} {
		key := "SCREENING_ORACLE_" + strings.ToUpper(n)
		a := get(key, "")
		if a == "" {
			continue
		}
		if !common.IsHexAddress(a) {
			bad(key, fmt.Errorf("%q: want the oracle contract's 0x address", a))
			continue
		}
		s.Oracles[n] = common.HexToAddress(a)
	}
	if s.Has("oracle") && len(s.Oracles) == 0 {
		bad("SCREENING", errors.New("oracle needs SCREENING_ORACLE_<NETWORK> (the sanctions oracle's contract address, e.g. SCREENING_ORACLE_BEP20)"))
	}
	s.APIURL, s.APIKey = get("SCREENING_API_URL", ""), get("SCREENING_API_KEY", "")
	if s.Has("api") {
		if u, err := url.Parse(s.APIURL); s.APIURL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("SCREENING_API_URL", errors.New("api needs the screening service's base URL, e.g. https://public.chainalysis.com/api/v1/address"))
		} else if c.Env == Production && u.Scheme != "https" {
			bad("SCREENING_API_URL", errors.New("production calls the screening service over https only"))
		}
		if s.APIKey == "" {
			bad("SCREENING_API_KEY", errors.New("api needs the screening service's key"))
		}
	}
}
