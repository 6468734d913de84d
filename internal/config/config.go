// Package config reads the service's settings from the environment once, at start,
// and validates them together, so a bad setting stops the process with a message
// naming it instead of failing a request later. Staging has working defaults for
// everything; production refuses the demo ones.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"partnerd/internal/address"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/approvals"
	"partnerd/internal/httpkit"
	"partnerd/internal/jobs"
	"partnerd/internal/kit/dburl"
	"partnerd/internal/kit/secrets"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing"
	"partnerd/internal/pricing/rates"
	"partnerd/internal/ratelimit"
	"partnerd/internal/tracing"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

// Environment is APP_ENV.
type Environment string

// The environments.
const (
	Staging    Environment = "staging"
	Production Environment = "production"
)

// Config is every setting.
type Config struct {
	// Screening is the screening of deposits' senders (screening.go).
	Screening Screening
	// Paystack is the provider of the banks and name enquiry (paystack.go).
	Paystack Paystack

	// Tracing holds the OTEL_* settings given (tracing.Settings; unset ones
	// absent), read by tracing.Setup when the service opens.
	Tracing map[string]string

	Env         Environment
	DatabaseURL string
	ListenAddr  string
	// PublicURL (PUBLIC_URL) is the address people reach the service at,
	// http(s)://HOST[:PORT][/PATH] without a trailing slash. The links the service
	// hands to people, to be opened later and elsewhere (an invitation printed by
	// the command line or shown on the dashboard), start with it, since neither the
	// listening address nor a request's Host header is where the public reaches it
	// behind a proxy. Production requires it; in staging, unset, it is empty and
	// LinkBase falls back to the listening address.
	PublicURL string

	// RateSource is "static" or "http".
	RateSource   string
	StaticRates  map[string]decimal.Decimal
	RateFeedURL  string
	RateFeedKeys map[string]string
	RateInterval time.Duration
	RateMaxAge   time.Duration

	Pairs  []pricing.Pair
	Spread decimal.Decimal

	PartnerFeeRate   decimal.Decimal
	PartnerShareRate decimal.Decimal

	// XPubs maps each network of Pairs to its account extended public key
	// (XPUB_<NETWORK>, e.g. XPUB_BEP20).
	XPubs map[string]string
	// DemoXPubs lists the networks that fell back to the public demo keys (staging only).
	DemoXPubs []string
	// Confirmations is how many confirmations a deposit needs per network.
	Confirmations map[string]int
	// WebhookSchedule is the wait before each webhook retry (WEBHOOK_RETRY_SCHEDULE).
	WebhookSchedule []time.Duration
	// RedisURL, when set, makes rate limits shared by every instance through Redis.
	RedisURL string
	// TrustedProxies (TRUSTED_PROXIES, comma-separated CIDRs) are the proxies
	// whose forwarding header names the client; empty, the client is the peer
	// and the headers are ignored.
	TrustedProxies httpkit.Proxies
	// Approvals (APPROVALS) are the actions that need a second operator (four
	// eyes): production's default is every one, staging's none, so the sandbox and
	// the tests stay one step. ApprovalTTL (APPROVAL_TTL) is how long a proposal
	// waits for one.
	Approvals   approvals.Set
	ApprovalTTL time.Duration
	// TrustedProxyHeader (TRUSTED_PROXY_HEADER) is the one header they write:
	// X-Forwarded-For (the default) or Forwarded; the other is never read.
	TrustedProxyHeader string
	// PprofAddr, when set, serves net/http/pprof there (keep it on loopback):
	// profiles of a running instance, for finding what a load costs.
	PprofAddr string
	// RateLimitReads and RateLimitWrites are the per-key budgets of GET requests and
	// of the others.
	RateLimitReads, RateLimitWrites ratelimit.Limit
	// JobPollInterval is how often job workers look for due jobs.
	JobPollInterval time.Duration
	// JobRescueAfter is how long a job may be running before its process is taken
	// for dead and the job retried (JOB_RESCUE_AFTER; more than jobs.LongestTimeout).
	JobRescueAfter time.Duration
	// ExpirySweep is how often the expiry sweep expires overdue transactions.
	ExpirySweep time.Duration
	// DepositWindow is how long a transaction waits for its deposit (30 minutes;
	// tests shorten it).
	DepositWindow time.Duration
	// Payments are the rules for counting transfers: tolerance, dust, late window
	// (payments.go).
	Payments lifecycle.Payments
	// ConfirmingTooLong is how long a deposit may confirm before the operators'
	// confirming_too_long stage lists it (CONFIRMING_TOO_LONG_AFTER, 30m).
	ConfirmingTooLong time.Duration

	// Settlement chooses the liquidity and payout adapters (settlement.go).
	Settlement Settlement

	// CursorSecret keys the HMAC of page cursors; every instance must share it.
	CursorSecret []byte
	// DemoCursorSecret is true when staging fell back to the built-in cursor secret.
	DemoCursorSecret bool
	// Secrets (SECRETS_KEYS: comma-separated id:base64-32-byte-key pairs, the
	// first the current one) seal the TOTP and webhook signing secrets at rest,
	// so the database alone never yields them; the older keys stay listed until
	// partnerd secrets rotate has moved every secret to the current one.
	// Production requires it; staging without it uses the built-in development
	// key (public) and warns.
	Secrets *secrets.Keyring

	// WebhookAllowPrivate lets webhook endpoints and deliveries reach private,
	// loopback and link-local addresses (WEBHOOK_ALLOW_PRIVATE_URLS=true): for a local
	// receiver such as `partnerd listen`. Off by default everywhere, since on a
	// hosted sandbox any partner could otherwise probe the internal network;
	// production refuses it.
	WebhookAllowPrivate bool

	// Chain is the deposit watcher's settings (chain.go).
	Chain Chain
}

// demoCursorSecret signs cursors in staging when CURSOR_SECRET is unset.
const demoCursorSecret = "partnerd-staging-cursor-secret-not-for-production"

// Defaults used in staging when a setting is unset.
const (
	DefaultListenAddr  = ":8080"
	DefaultStaticRates = "usdt=1550.00"
	DefaultPairs       = "usdt:bep20:1000:50000000,usdt:trc20:1000:50000000"
	DefaultSpread      = "0.005"
	DefaultFeeRate     = "0.01"
	DefaultShareRate   = "0.5"
	// DefaultConfirmations are the confirmations a deposit needs per network.
	DefaultConfirmations = "bep20=15,trc20=19"
)

// FromEnv reads the configuration from the process environment.
func FromEnv() (*Config, error) { return Load(os.Getenv) }

// Load reads the configuration through getenv (tests pass a map's lookup). Every
// setting is read and checked by one of the reader's methods below, one per area;
// every problem is reported, each naming its setting.
func Load(getenv func(string) string) (*Config, error) {
	r := &reader{getenv: getenv}
	c := &Config{}
	r.basics(c)
	r.rates(c)
	r.pricing(c)
	r.addresses(c)
	r.confirmations(c)
	r.operations(c)
	c.Settlement = loadSettlement(c.Env, r.get, r.bad)
	r.cursorSecret(c)
	r.secretKeys(c)
	r.webhooks(c)
	r.screening(c)
	r.paystack(c)
	c.Tracing = map[string]string{}
	for _, k := range tracing.Settings {
		if v := getenv(k); v != "" {
			c.Tracing[k] = v
		}
	}
	if len(r.errs) > 0 {
		return nil, fmt.Errorf("invalid configuration: %w", errors.Join(r.errs...))
	}
	return c, nil
}

// reader reads settings and collects what is wrong with them.
type reader struct {
	getenv func(string) string
	errs   []error
}

// get returns the trimmed setting key, or def when it is unset or blank.
func (r *reader) get(key, def string) string {
	if v := strings.TrimSpace(r.getenv(key)); v != "" {
		return v
	}
	return def
}

// bad records a problem with setting key.
func (r *reader) bad(key string, err error) { r.errs = append(r.errs, fmt.Errorf("%s: %w", key, err)) }

// basics reads the environment, the database and the listen address.
func (r *reader) basics(c *Config) {
	get, bad := r.get, r.bad
	*c = Config{
		Env:         Environment(get("APP_ENV", string(Staging))),
		DatabaseURL: get("DATABASE_URL", dburl.Default),
		ListenAddr:  get("LISTEN_ADDR", DefaultListenAddr),
	}
	if c.Env != Staging && c.Env != Production {
		bad("APP_ENV", fmt.Errorf("%q: want staging or production", c.Env))
	}
	if d, _, err := dburl.Parse(c.DatabaseURL); err != nil {
		bad("DATABASE_URL", err)
	} else if d == dburl.SQLite && c.Env == Production {
		bad("DATABASE_URL", errors.New("production refuses the embedded SQLite database (one instance, no backups); set a postgres:// URL"))
	}
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		bad("LISTEN_ADDR", fmt.Errorf("%q: want HOST:PORT or :PORT, e.g. :8080", c.ListenAddr))
	}
	r.publicURL(c)
}

// publicURL reads PUBLIC_URL: required in production, and https there (the
// dashboard's cookies are Secure, so a link on http could not be signed in from).
func (r *reader) publicURL(c *Config) {
	v := r.get("PUBLIC_URL", "")
	if v == "" {
		if c.Env == Production {
			r.bad("PUBLIC_URL", errors.New("production needs the address people reach the service at, e.g. https://partnerd.example.com: the links it hands out (invitations) start with it"))
		}
		return
	}
	u, err := url.Parse(v)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		r.bad("PUBLIC_URL", fmt.Errorf("%q: want the address people reach the service at, http(s)://HOST[:PORT], e.g. https://partnerd.example.com", v))
	case c.Env == Production && u.Scheme != "https":
		r.bad("PUBLIC_URL", fmt.Errorf("%q: production is reached over https (its sessions' cookies are Secure)", v))
	default:
		c.PublicURL = strings.TrimRight(v, "/")
	}
}

// LinkBase is what the links handed to people start with: PUBLIC_URL, or, when it
// is unset (staging), http://HOST:PORT of the address the service listens on, so
// that a link printed on a developer's machine opens there. listening is the
// bound listener's address (its real port when LISTEN_ADDR's is 0); nil means
// LISTEN_ADDR, for a command that does not serve. HOST is localhost when the
// service listens on every interface.
func (c *Config) LinkBase(listening net.Addr) string {
	if c.PublicURL != "" {
		return c.PublicURL
	}
	host, port, _ := net.SplitHostPort(c.ListenAddr)
	if tcp, ok := listening.(*net.TCPAddr); ok {
		host, port = tcp.IP.String(), strconv.Itoa(tcp.Port)
		if tcp.IP == nil || tcp.IP.IsUnspecified() {
			host = ""
		}
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// rates reads where exchange rates come from.
func (r *reader) rates(c *Config) {
	get, bad := r.get, r.bad
	defaultSource := "static"
	if c.Env == Production {
		defaultSource = "http"
	}
	c.RateSource = get("RATE_SOURCE", defaultSource)
	switch c.RateSource {
	case "static":
		if c.Env == Production {
			bad("RATE_SOURCE", errors.New("production refuses the static demo rates; set RATE_SOURCE=http with RATE_FEED_URL and RATE_FEED_FIELDS"))
		}
		t, err := rates.ParseStaticTable(get("STATIC_RATES", DefaultStaticRates))
		if err != nil {
			bad("STATIC_RATES", err)
		}
		c.StaticRates = t
	case "http":
		c.RateFeedURL = get("RATE_FEED_URL", "")
		if c.RateFeedURL == "" {
			bad("RATE_FEED_URL", errors.New("required when RATE_SOURCE=http"))
		}
		f, err := rates.ParseFields(get("RATE_FEED_FIELDS", ""))
		if err != nil {
			bad("RATE_FEED_FIELDS", err)
		}
		c.RateFeedKeys = f
	default:
		bad("RATE_SOURCE", fmt.Errorf("%q: want static or http", c.RateSource))
	}
	c.RateInterval = duration(get("RATE_FEED_INTERVAL", "30s"), "RATE_FEED_INTERVAL", bad)
	c.RateMaxAge = duration(get("RATE_MAX_AGE", "5m"), "RATE_MAX_AGE", bad)
}

// pricing reads the supported pairs, the spread and the revenue rates.
func (r *reader) pricing(c *Config) {
	get, bad := r.get, r.bad
	pairs, err := pricing.ParsePairs(get("PAIRS", DefaultPairs))
	if err != nil {
		bad("PAIRS", err)
	}
	c.Pairs = pairs
	c.Spread = fraction(get("QUOTE_SPREAD", DefaultSpread), "QUOTE_SPREAD", bad)
	c.PartnerFeeRate = fraction(get("PARTNER_FEE_RATE", DefaultFeeRate), "PARTNER_FEE_RATE", bad)
	c.PartnerShareRate = fraction(get("PARTNER_SHARE_RATE", DefaultShareRate), "PARTNER_SHARE_RATE", bad)
}

// addresses reads the account xpub of each network (the demo keys in staging only).
// Production refuses a demo key by its material (address.DemoKey), so neither
// other version bytes nor the other network's setting let one through. One key
// may serve both networks: indexes and matching are per network, so nothing
// mixes; wallets export one account per coin type (60' and 195'), which is the
// usual setup.
func (r *reader) addresses(c *Config) {
	get, bad := r.get, r.bad
	c.XPubs = map[string]string{}
	for _, p := range c.Pairs {
		if _, done := c.XPubs[p.Network]; done {
			continue
		}
		key := "XPUB_" + strings.ToUpper(p.Network)
		x := get(key, "")
		if x == "" {
			demo, ok := address.DemoXPubs[p.Network]
			switch {
			case c.Env == Production:
				bad(key, fmt.Errorf("production needs the account xpub of %s deposit addresses", p.Network))
			case !ok:
				bad(key, fmt.Errorf("no demo key exists for %s; set the account xpub", p.Network))
			default:
				x = demo
				c.DemoXPubs = append(c.DemoXPubs, p.Network)
			}
		}
		if demoOf, isDemo := address.DemoKey(x); isDemo && c.Env == Production {
			bad(key, fmt.Errorf("production refuses the public demo key of %s, whatever its version bytes (its private keys are public: anyone can spend deposits); set your wallet's account xpub", demoOf))
		} else if x != "" {
			if _, err := address.NewDeriver(p.Network, x); err != nil {
				bad(key, err)
			}
		}
		c.XPubs[p.Network] = x
	}
}

// confirmations reads the confirmations each network needs.
func (r *reader) confirmations(c *Config) {
	get, bad := r.get, r.bad
	c.Confirmations = map[string]int{}
	for _, item := range strings.Split(get("CONFIRMATIONS", DefaultConfirmations), ",") {
		network, n, ok := strings.Cut(strings.TrimSpace(item), "=")
		v, err := strconv.Atoi(n)
		if !ok || err != nil || v < 1 || network == "" {
			bad("CONFIRMATIONS", fmt.Errorf("%q: want network=count, e.g. bep20=15", item))
			continue
		}
		c.Confirmations[strings.ToLower(network)] = v
	}
}

// operations reads the job, rate-limit, webhook-retry and deposit-window settings.
func (r *reader) operations(c *Config) {
	get, bad := r.get, r.bad
	c.ExpirySweep = duration(get("EXPIRY_SWEEP_INTERVAL", "1s"), "EXPIRY_SWEEP_INTERVAL", bad)
	c.RedisURL = get("REDIS_URL", "")
	if p, err := httpkit.ParseProxies(get("TRUSTED_PROXIES", "")); err != nil {
		bad("TRUSTED_PROXIES", err)
	} else {
		c.TrustedProxies = p
	}
	if h, err := httpkit.ParseProxyHeader(get("TRUSTED_PROXY_HEADER", "")); err != nil {
		bad("TRUSTED_PROXY_HEADER", err)
	} else {
		c.TrustedProxyHeader = h
	}
	defaultApprovals := ""
	if c.Env == Production {
		defaultApprovals = approvals.All()
	}
	if set, err := approvals.ParseSet(get("APPROVALS", defaultApprovals)); err != nil {
		bad("APPROVALS", err)
	} else {
		c.Approvals = set
	}
	c.ApprovalTTL = duration(get("APPROVAL_TTL", "24h"), "APPROVAL_TTL", bad)
	c.PprofAddr = get("PPROF_ADDR", "")
	reads, writes := "1000/1s,burst=2000", "500/1s,burst=1000" // staging: relaxed
	if c.Env == Production {
		reads, writes = "100/1s,burst=200", "25/1s,burst=50"
	}
	var err2 error
	if c.RateLimitReads, err2 = ratelimit.ParseLimit(get("RATE_LIMIT_READS", reads)); err2 != nil {
		bad("RATE_LIMIT_READS", err2)
	}
	if c.RateLimitWrites, err2 = ratelimit.ParseLimit(get("RATE_LIMIT_WRITES", writes)); err2 != nil {
		bad("RATE_LIMIT_WRITES", err2)
	}
	c.JobPollInterval = duration(get("JOB_POLL_INTERVAL", "200ms"), "JOB_POLL_INTERVAL", bad)
	c.JobRescueAfter = duration(get("JOB_RESCUE_AFTER", jobs.DefaultRescueAfter.String()), "JOB_RESCUE_AFTER", bad)
	if c.JobRescueAfter > 0 && c.JobRescueAfter <= jobs.LongestTimeout() {
		bad("JOB_RESCUE_AFTER", fmt.Errorf("%s: must exceed the longest job timeout, %s (a live job would be taken for a dead one)", c.JobRescueAfter, jobs.LongestTimeout()))
	}
	for _, item := range strings.Split(get("WEBHOOK_RETRY_SCHEDULE", webhook.ScheduleString(webhook.ScheduleFor(c.Env == Production))), ",") {
		c.WebhookSchedule = append(c.WebhookSchedule, duration(strings.TrimSpace(item), "WEBHOOK_RETRY_SCHEDULE", bad))
	}
	loadChain(c, get, bad)
	c.DepositWindow = duration(get("DEPOSIT_WINDOW", transactions.DepositWindow.String()), "DEPOSIT_WINDOW", bad)
	c.Payments = loadPayments(get, bad)
	c.ConfirmingTooLong = duration(get("CONFIRMING_TOO_LONG_AFTER", backoffice.DefaultConfirmingTooLong.String()), "CONFIRMING_TOO_LONG_AFTER", bad)
}

// cursorSecret reads the page cursors' HMAC key (the built-in one in staging only).
func (r *reader) cursorSecret(c *Config) {
	get, bad := r.get, r.bad
	if s := get("CURSOR_SECRET", ""); s != "" {
		if len(s) < 32 {
			bad("CURSOR_SECRET", errors.New("at least 32 characters"))
		}
		if s == demoCursorSecret && c.Env == Production {
			bad("CURSOR_SECRET", errors.New("production refuses the built-in staging secret (it is public); set a random secret of at least 32 characters"))
		}
		c.CursorSecret = []byte(s)
	} else if c.Env == Production {
		bad("CURSOR_SECRET", errors.New("production needs a secret of at least 32 characters, shared by all instances"))
	} else {
		c.CursorSecret, c.DemoCursorSecret = []byte(demoCursorSecret), true
	}
}

// secretKeys reads SECRETS_KEYS (the built-in development key in staging only;
// staging keeps opening what that key sealed, so a staging database can move to
// keys of its own and rotate onto them).
func (r *reader) secretKeys(c *Config) {
	get, bad := r.get, r.bad
	if v := get("SECRETS_KEYS", ""); v != "" {
		k, err := secrets.Parse(v)
		if err != nil {
			bad("SECRETS_KEYS", err)
			return
		}
		if c.Env != Production {
			k = k.WithDevelopment()
		}
		c.Secrets = k
	} else if c.Env == Production {
		bad("SECRETS_KEYS", errors.New("production needs id:key with a random 32-byte key in base64 (openssl rand -base64 32), shared by all instances"))
	} else {
		c.Secrets = secrets.Development()
	}
}

// webhooks reads whether webhook destinations may be private addresses.
func (r *reader) webhooks(c *Config) {
	get, bad := r.get, r.bad
	switch v := get("WEBHOOK_ALLOW_PRIVATE_URLS", "false"); v {
	case "true":
		c.WebhookAllowPrivate = true
		if c.Env == Production {
			bad("WEBHOOK_ALLOW_PRIVATE_URLS", errors.New("production refuses private webhook destinations; unset it"))
		}
	case "false":
	default:
		bad("WEBHOOK_ALLOW_PRIVATE_URLS", fmt.Errorf("%q: want true or false", v))
	}
}

func duration(s, key string, bad func(string, error)) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		bad(key, fmt.Errorf("%q: want a positive duration such as 30s", s))
	}
	return d
}

// fraction parses a decimal in [0, 1).
func fraction(s, key string, bad func(string, error)) decimal.Decimal {
	d, err := decimal.NewFromString(s)
	if err != nil || d.IsNegative() || d.GreaterThanOrEqual(decimal.NewFromInt(1)) {
		bad(key, fmt.Errorf("%q: want a decimal fraction from 0 to below 1, e.g. 0.005", s))
	}
	return d
}
