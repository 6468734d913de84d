package rpc

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Verdict is what an answer means to the watcher.
type Verdict struct {
	Kind    string        // "" (ok) or one of the Kind* constants
	Wait    time.Duration // rate limits: the wait the provider asks for (header or body hint); 0: none named
	Cap     uint64        // KindRange / KindResults: the cap the answer names; 0: none named
	Code    int           // JSON-RPC error code, when there was one
	Message string        // the node's own message (or a short snippet of the body)
}

// Classify reads one answer (HTTP status, headers, body) as the watcher must act on
// it. It is the only place that knows the nodes' and providers' error texts and
// codes: the HTTP and WebSocket transports both hand it every answer, so a text
// learnt here is learnt everywhere. Samples of every rule, with their sources, are
// in testdata/rpcanswers. The dialect and method name the answer's context; today
// every rule holds for every node and method (a provider of either network may
// sit behind any gateway).
func Classify(d Dialect, method string, status int, header http.Header, body []byte) Verdict {
	v, _ := classify(d, method, status, header, body)
	return v
}

// envelope is a JSON-RPC answer, and the envelope-less error bodies that arrive in
// its place: java-tron's limiter and TronGrid write {"Error": "..."}, some gateways
// {"error": "..."} or {"message": "..."}.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	TronErr json.RawMessage `json:"Error"`
	Message json.RawMessage `json:"message"`
}

type rpcError struct {
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// classify is Classify that also returns an ok answer's result, so the client
// parses a large answer once.
func classify(d Dialect, method string, status int, header http.Header, body []byte) (Verdict, json.RawMessage) {
	ok := status >= 200 && status < 300
	var env envelope
	trimmed := bytes.TrimSpace(body)
	isObject := len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &env) == nil
	if !isObject {
		// Not JSON: a gateway's text or HTML page.
		v := Verdict{Message: snippet(body)}
		text := strings.ToLower(string(body))
		switch {
		case rules.match(KindOperator, text) || operatorStatus(status):
			v.Kind = KindOperator
		case rules.match(KindSubscriptions, text):
			v.Kind = KindSubscriptions
		case status == http.StatusTooManyRequests:
			v.Kind = KindRateLimit
		case rules.match(KindRateLimit, text) || sounds.MatchString(text):
			// A CDN's or gateway's page, on any status: whatever speaks of a
			// rate, a limit or too many is waited out, never hammered.
			v.Kind = KindRateLimit
		case ok:
			v.Kind, v.Message = KindDecode, "not a JSON-RPC answer: "+v.Message
			return v, nil
		default:
			v.Kind = KindHTTP
		}
		v.Wait = waitOf(header, text, nil)
		return v, nil
	}

	var e rpcError
	isError := false
	switch {
	case len(env.Error) > 0 && !isNull(env.Error):
		isError = true
		if json.Unmarshal(env.Error, &e) != nil {
			// {"error": "text"}
			var s string
			_ = json.Unmarshal(env.Error, &s)
			e.Message = s
		}
	case len(env.TronErr) > 0 && !isNull(env.TronErr):
		isError = true
		e.Message = jsonText(env.TronErr)
	case len(env.Result) == 0 && len(env.JSONRPC) == 0 && len(env.ID) == 0 && len(env.Message) > 0:
		isError = true
		e.Message = jsonText(env.Message)
	}
	if !isError {
		// An object with neither "jsonrpc" nor "id" is no JSON-RPC answer, even
		// with a "result": an explorer API's {"status":"0","message":"NOTOK",
		// "result":"Max calls per sec rate limit reached (5/sec)"} is a rate limit,
		// and its {"status":"1","result":…} no answer of a node (decode, never ok).
		unknown := len(env.JSONRPC) == 0 && len(env.ID) == 0
		text := strings.ToLower(string(body))
		if ok && unknown {
			// Only what the body says counts, not its keys ("gasLimit").
			text = strings.ToLower(valuesText(trimmed))
		}
		switch {
		case (!ok || unknown) && (rules.match(KindOperator, text) || operatorStatus(status)):
			return Verdict{Kind: KindOperator, Message: snippet(body)}, nil
		case (!ok || unknown) && rules.match(KindSubscriptions, text):
			return Verdict{Kind: KindSubscriptions, Message: snippet(body)}, nil
		case (!ok || unknown) && status == http.StatusTooManyRequests:
			return Verdict{Kind: KindRateLimit, Message: snippet(body), Wait: waitOf(header, text, nil)}, nil
		case (!ok || unknown) && (rules.match(KindRateLimit, text) || sounds.MatchString(text)):
			return Verdict{Kind: KindRateLimit, Message: snippet(body), Wait: waitOf(header, text, nil)}, nil
		case !ok:
			return Verdict{Kind: KindHTTP, Message: snippet(body)}, nil
		case unknown:
			return Verdict{Kind: KindDecode, Message: "not a JSON-RPC answer: " + snippet(body)}, nil
		}
		return Verdict{}, env.Result
	}

	v := Verdict{Code: codeOf(e.Code), Message: e.Message}
	data := dataText(e.Data)
	if v.Message == "" {
		v.Message = snippet([]byte(data))
	}
	if v.Message == "" {
		v.Message = snippet(body)
	}
	text := strings.ToLower(normalizeNumbers(e.Message + " " + data))
	v.Kind = rules.kind(text, v.Code)
	switch {
	case status == http.StatusTooManyRequests && v.Kind != KindOperator && v.Kind != KindSubscriptions:
		// The status is the provider's own word; a cap is never sent as 429 (a
		// monthly quota is: Alchemy's, which no wait ends; nor is a refused
		// subscription, which a new connection ends).
		v.Kind = KindRateLimit
	case v.Kind == "" && operatorStatus(status):
		v.Kind = KindOperator
	case v.Kind == "" && sounds.MatchString(text):
		// No rule knows the text, but it speaks of a rate, a limit or too many:
		// waited out (bounded), never read as a cap or hammered.
		v.Kind = KindRateLimit
	case v.Kind == "" && ok:
		v.Kind = KindRPC
	case v.Kind == "":
		v.Kind = KindHTTP
	}
	switch v.Kind {
	case KindRange, KindResults:
		v.Cap = capOf(v.Kind, strings.ToLower(normalizeNumbers(e.Message)), e.Data)
	default:
		v.Wait = waitOf(header, text, e.Data)
	}
	return v, nil
}

// rule is one way an answer says what it means: any of its patterns in the
// message or error.data (a text, or an object's JSON, so a key such as
// "maxBlockRange" speaks too), or any of its codes when no message pattern of any rule
// matched.
type rule struct {
	kind     string
	patterns []*regexp.Regexp
	codes    []int
}

type ruleSet []rule

// rules, in the order they are tried: an answer saying a person must act (a key
// refused, a monthly quota or plan exhausted, a retired endpoint, history outside
// the plan) is that first, whatever else it says, since no wait ends it; a
// message that names a rate limit is one even
// when it says "limit" near a number; a node that is not ready says "not found"
// of a block, not of the method (geth's "invalid block range params" is a range
// past its head: a node behind, not a cap); result caps are told before range caps because
// Alchemy's result cap also names a block range; a request reaching beyond the
// node's head ("extends beyond current head block", "could not be found") is a node
// behind, not a cap; "limit exceeded" alone (bsc-dataseed,
// Infura) is a rate limit, tried after the caps so "block range limit exceeded" is a
// range. Infura's "query timeout exceeded" (-32005 too) is a query too heavy: a
// range with no cap named, so the span shrinks instead of the same request waiting
// and repeating. Codes decide only when no text did.
//
// A subscription refused for the number already open on the connection ("too
// many subscriptions", Kaia's "Maximum 5 subscriptions are allowed for a
// websocket connection") is told before any rate limit: "too many" would read it
// as one, and no wait on the same connection ends it. A block the node does not
// hold, named by its number, hash or tag ("block #123 not found", "block number
// out of range", "block 50162452 is beyond the latest block") is a node behind;
// a range of blocks is not a block, so "block range …" never reads as one. A
// number of blocks in a text that refuses ("more than 2000 blocks", "exceeds
// 5000 blocks", "Limit exceeded: … 10.000 blocks") is a range cap, whatever
// words carry it. A server that says it is busy or that requests come too
// quickly is a rate limit.
var rules = ruleSet{
	{kind: KindOperator, patterns: res(
		`invalid (api[ _-]?)?key`, `(api[ _-]?)?key (is |was |has been )?(invalid|revoked|disabled|deactivated|suspended|expired|not (found|valid|recogni[sz]ed))`,
		`(missing|no) (api[ _-]?)?key`, `(project|app|application|account|token) (id )?(is |has been )?(revoked|disabled|deactivated|suspended|banned|deleted|not found|invalid)`,
		`invalid (project|app|application) id`, `unauthori[sz]ed`, `authentication (failed|required)`, `payment required`,
		`monthly (quota|limit|capacity|usage|credits?|request)`, `(quota|credits?|plan|subscription) (is |was |has |has been |have been )?(exhausted|used up|depleted|expired|inactive|cancell?ed)`,
		`exhausted (your|the|its) (quota|plan|credits?)`, `out of (credits|compute units)`, `upgrade (your|to a) (plan|tier|subscription) to (use|access|enable)`,
		`(not|isn't) (available|supported|included|allowed|enabled) (on|in|for|with) (your|the|this) (current |free )?(plan|tier|subscription)`,
		`requires? (a |an )?(paid|premium|archive|higher|pro|growth|enterprise) (plan|tier|node|subscription|access)`,
		`archive (node|data|access|requests?) (is |are )?(required|not (available|enabled|supported))`,
		`(endpoint|url|api|service) (has been |is |was )?(retired|deprecated|decommissioned|discontinued|sunset|removed|shut ?down)`,
		`no longer (supported|available|served|active)`)},
	{kind: KindSubscriptions, patterns: res(
		`too many (active |open |concurrent |websocket |ws )?subscriptions`,
		`subscriptions? (count |number )?(limit|cap|maximum|max)\b[^.]{0,40}\b(connection|socket|websocket|ws|client|session)\b`,
		`\b(max(imum)?|limit|cap)\b[^.]{0,30}\bsubscriptions\b[^.]{0,40}\b(per|for|on|of) (a |an |this |the |each |one |your |every )?(single )?(connection|socket|websocket|ws|client|session)\b`,
		`subscriptions (per|for each|on each|on this|on the) (connection|socket|websocket|ws|client|session)\b`,
		`\b(max(imum)?|limit)( number)?( of)?( active| open| concurrent)? subscriptions (reached|exceeded|hit)`,
		`(exceeded|reached|hit) (the )?(max(imum)?|limit|cap)( number)?( of)?( allowed)?( active| open| concurrent)? subscriptions`,
		`subscriptions (limit|cap|maximum) (reached|exceeded|hit)`)},
	{kind: KindRateLimit, patterns: res(
		`\brate.?limit`, `usage limit`, `too many requests`, `frequency limit`, `suspended for`, `lack of computing resources`,
		`request rate`, `allowed_rps`, `requests? per second`, `/second request limit`, `compute units`,
		`capacity exceeded`, `exceeded .*capacity`, `daily request count`, `daily usage`, `quota`, `credits`,
		`throttl`, `request limit reached`, `exceeded the max(imum)? (request|call)`,
		`\b(server|node|service|backend|upstream|system|gateway|endpoint|provider|rpc)s? (is |are )?(currently |temporarily |too |very )?(busy|overloaded|over capacity)\b`,
		`\bbusy\b[^.]{0,30}\b(try|retry|again|later)\b`, `server_busy`,
		`too (quick(ly)?|fast|frequent(ly)?|often)\b`, `slow down`, `calls per (sec(ond)?|minute|min)\b`),
		codes: []int{-32005, -32007, -32090, 429}},
	{kind: KindNotReady, patterns: res(
		`(finalized|safe|head|latest) (block|header) not (found|available)`, `header not found`,
		`block not found`, `unknown block`, `not ready`, `still syncing`, `is syncing`,
		`invalid block range params`, `beyond (the )?(current |latest |chain )?head`, `past (the )?(current |latest |chain )?head`,
		`ahead of (the )?(current |latest |chain )?(head|block)`, `after (the )?(last|latest) (accepted |known )?block`,
		`(block|header|range)[^.]{0,60}could not be found`, `(block|header) [^.]{0,40}not (yet )?(available|known|synced)`,
		// A block named by its number, hash or tag that the node does not hold:
		// "block #123 not found", "block 0x1b4 not found", "block with number 7
		// does not exist", "header for hash not found", "requested block number
		// 0x… is out of range", "block height 12 is in the future".
		blockRef+`(is |was |has |does |did )?(not found|not exist|not yet (available|known|produced|mined|synced)|out of range|out of bounds|in the future|not in (the )?(chain|range)|missing|unavailable|too (high|new|far ahead))`,
		blockRef+`(doesn't|does not|did not|didn't) exist`,
		`(cannot|can't|could not|couldn't|unable to) (find|load|get|retrieve) (the )?(requested )?(block|header)(\s*[^a-z\s]|\s*$| (number|height|hash|with|for|at|of|in)\b)`,
		`no (such )?(block|header) (found|for|with|at)\b`,
		// Beyond the node's head, in any words: "block 50162452 is beyond the latest
		// block 50162448 of this node", "height 61453 must be less than or equal to
		// the current blockchain height 10245", "toBlock is greater than the latest block".
		`(beyond|past|above|after|ahead of|greater than|higher than|later than|exceeds) (the )?(current|latest|last|highest|chain|node'?s?|local|best) (known |synced |accepted |chain |blockchain )?`+oneBlock,
		`(less|lower) than or equal to (the )?(current|latest|last|highest) (blockchain |block |chain )?(height|head|block|number)\b`,
		`\d+ blocks? behind\b`, `\b(node|backend|server|upstream|replica) (is )?(still )?(behind|lagging|catching up)\b`)},
	{kind: KindResults, patterns: res(
		`query returned more than`, `more than \d+ (results|logs)`, `max(imum)? results`, `too many (results|logs)`,
		`results exceed`, `returned too many`, `response (byte )?size`, `response too large`, `response is too (large|big)`,
		`logs in the response`, `log response`, `logs matched by query exceeds`, `max_?(results|logs)`, `response exceeds`),
		codes: []int{-32003}},
	{kind: KindRange, patterns: res(
		`block range`, `blocks range`, `range too (large|big|wide)`, `range is too (large|big|wide)`, `too wide`,
		`range limit`, `max(imum)? range`, `range \d+ exceeds`, `range [^.]{0,30}exceeds? (the )?(max|limit)`, `exceeds? max(imum)? block`, `blocks distance`,
		`limited to an? \d+ (blocks? )?range`, `limited to \d+ blocks?`, `ranges? over \d+ blocks`, `block span`,
		`too many blocks`, `requested blocks`, `at most \d+ blocks`, `range allowed`, `smaller than size`,
		`max_?blocks?_?range`, `range_?limit`, `query timeout`,
		// A number of blocks a refusal names, in any words: "more than 2000
		// blocks", "exceeds 5000 blocks", "limited to 10000-block queries",
		// "a 5000 block limit", "Limit exceeded: … 10000 blocks".
		blocksCount,
		`\b\d+\s*-?\s*blocks?\s*(limit|cap|max(imum)?|window|span)\b`,
		`\blimit(ed|s)?\b[^.]{0,60}\b\d+\s*-?\s*blocks?\b`),
		codes: []int{-32614}},
	{kind: KindRateLimit, patterns: res(`limit exceeded`, `limit reached`)},
	{kind: KindRefused, patterns: res(
		`method not found`, `does not exist`, `is not available`, `not supported`, `is disabled`, `not enabled`,
		`method not allowed`, `unsupported method`, `not whitelisted`, `not allowed on`),
		codes: []int{-32601}},
}

// blockRef is a reference to one block in a node's answer: "block" or "header",
// then perhaps "number", "height", "hash", "tag" or "with/for number …", then
// perhaps the number, hash or tag itself. "block range" and "blocks" are no
// reference to one block: "range" is none of these words.
const blockRef = `\b(block|header)` +
	`( (number|height|num|hash|tag|id))?` +
	`( (with|for|of|at) (number|height|hash|tag|id))?` +
	`(\s*[#:]?\s*(0x[0-9a-f]+|-?\d+|"[^"]{0,80}"|'[^']{0,80}'))?` +
	`(\s*\([^)]{0,80}\))?\s*,?\s+`

// oneBlock ends a mention of the node's head as one block: "block" followed by
// its number, a stop or nothing ("the latest block 50162448", "the latest
// block."), never by another noun ("the current block gas limit").
const oneBlock = `(block( ?number)?|head|tip|height)(\s*[^a-z\s]|\s*$| (of|on|in|at|for|number)\b)`

// blocksCount is a number of blocks after a word that makes it the most a
// request may span ("more than 2000 blocks", "exceeds 5000 blocks", "up to 1000
// blocks"); capPatterns reads the number as the cap.
const blocksCount = `\b(?:more than|over|above|exceeds?|exceeded|exceeding|beyond|greater than|larger than|bigger than|up to|at most|no more than|maximum of|max of|max|maximum|limit of|limited to|limit is|limit)\s*:?\s*(\d+)\s*-?\s*blocks?\b`

// sounds reads an answer no rule names: one that speaks of a rate, a limit or too
// many of anything (Cloudflare's 1015 page says "rate limited" in its own words) is
// a rate limit, on any status and in any envelope or none.
var sounds = regexp.MustCompile(`\brates?\b|rate.?limit|limit|too many|error code:? ?1015`)

// operatorStatus: HTTP 401 and 402 are a key refused or a plan unpaid, whatever
// the body says: only a person can fix them.
func operatorStatus(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusPaymentRequired
}

func res(ps ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(ps))
	for i, p := range ps {
		out[i] = regexp.MustCompile(p)
	}
	return out
}

// match reports whether text matches any pattern of kind's rules.
func (rs ruleSet) match(kind, text string) bool {
	for _, r := range rs {
		if r.kind != kind {
			continue
		}
		for _, p := range r.patterns {
			if p.MatchString(text) {
				return true
			}
		}
	}
	return false
}

// kind names an error by its text first, its code second; "" when neither says.
func (rs ruleSet) kind(text string, code int) string {
	for _, r := range rs {
		for _, p := range r.patterns {
			if p.MatchString(text) {
				return r.kind
			}
		}
	}
	if code == 0 {
		return ""
	}
	for _, r := range rs {
		for _, c := range r.codes {
			if c == code {
				return r.kind
			}
		}
	}
	return ""
}

// The places a cap's number appears, per kind, first match wins. A result cap is a
// count of logs: a response-size cap names bytes, which are no count, so none of
// these reads it.
var capPatterns = map[string][]*regexp.Regexp{
	KindRange: res(
		`maximum is set to (\d+)`,                             // "requested too many blocks from 1 to 9000, maximum is set to 2048"
		`max(?:imum)? block range\s*(?:=|:|of|is)?\s*(\d+)`,   // geth, bsc, java-tron, reth, publicnode
		`max range:? (\d+)`,                                   // Cloudflare
		`maximum allowed number of requested blocks is (\d+)`, // thirdweb
		`up to an? (\d+)[ -]?blocks?`,                         // Alchemy: "up to a 10 block range", "a 2K block range"
		`limited to an? (\d+)(?: blocks?)? range`,             // QuickNode: "limited to a 10,000 range"
		`limited to (\d+) blocks?`,                            // BlockPI
		`range \d+ exceeds (?:the )?limit of (\d+)`,           // Infura: "range 1000000 exceeds limit of 10000"
		`\(\d+ > (\d+)\)`,                                     // Blast: "exceeds the range allowed for your plan (5000 > 500)"
		`at most (\d+) blocks`,                                // Coinbase
		`ranges? over (\d+) blocks`,                           // dRPC
		`blocks? distance:? (\d+)`,                            // Ankr: "maximum [from, to] blocks distance: 10000"
		`block range (?:greater than|exceeds) (\d+)`,          // Swell, Somnia
		`\(maximum (\d+)\)`,                                   // Moonbeam
		blocksCount,                                           // Energy Web: "Query requested more than 10.000 blocks"
		// A number of blocks before a word of limit: "a 3000 block limit".
		`(\d+)\s*-?\s*blocks?\s*(?:limit|cap|max(?:imum)?|window|span)\b`,
		// A text that names the refused size and the cap ("block range 2500 exceeds
		// max 2000"): the number after a word of limit is the cap, tried before
		// the number after "block range", which may be the refused size.
		`(?:max|maximum|limit|allowed)(?: is| of)?:? (\d+)`,
		`\b(?:max|maximum|limit|allowed|up to)\b[^\d]{0,20}?(\d+)`,
		`(?:block range|range limit|block span)[^\d\[]{0,24}?(\d+)`,
	),
	KindResults: res(
		`more than (\d+) (?:results|logs)`,                  // geth forks, java-tron, Infura
		`max(?:imum)? (?:results|logs)(?: is| of)?:? (\d+)`, // reth: "query exceeds max results 20000"
		`cap of (\d+) (?:logs|results)`,                     // Alchemy: "a cap of 10K logs"
		`(?:results|logs) limit(?: is| of)?:? (\d+)`,
		`limit(?: is| of)?:? (\d+) (?:results|logs)`,
		`logs matched by query exceeds limit of (\d+)`, // Arbitrum (Nitro)
	),
}

// capOf returns the cap an error of kind names in its message, or else in its
// error.data (a text, or an object with a limit-like key); 0 when none.
func capOf(kind, message string, data json.RawMessage) uint64 {
	if n := capIn(kind, message); n > 0 {
		return n
	}
	if len(data) == 0 {
		return 0
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) == nil {
		for k, raw := range obj {
			key := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(k))
			if !capKeys[key] {
				continue
			}
			if n, ok := number(raw); ok && n > 1 && n < math.MaxUint32 {
				return uint64(n)
			}
		}
		// A text inside the object (Tenderly: {"payload": "range 9009594 is
		// bigger than range limit 2000"}).
		return capIn(kind, strings.ToLower(normalizeNumbers(dataText(data))))
	}
	s := dataText(data)
	if n, err := strconv.ParseUint(strings.TrimSpace(normalizeNumbers(s)), 10, 64); err == nil && n > 1 {
		return n
	}
	return capIn(kind, strings.ToLower(normalizeNumbers(s)))
}

// capKeys are error.data keys providers put a cap under (lower case, without _ and -).
var capKeys = map[string]bool{
	"limit": true, "max": true, "maxrange": true, "maxblockrange": true, "blockrange": true, "rangelimit": true,
	"maxblocks": true, "blocklimit": true, "maxresults": true, "maxlogs": true, "resultlimit": true, "cap": true,
}

// spans are ranges written out ("0 - 50", "from 100 to 9000", "[100, 9000]"):
// the refused request, never a cap.
var spans = regexp.MustCompile(`\d+\s*(?:-|–|\.\.|to|,)\s*\d+`)

func capIn(kind, text string) uint64 {
	if kind == KindRange {
		text = spans.ReplaceAllStringFunc(text, func(m string) string {
			if strings.HasPrefix(m, "0x") {
				return m
			}
			return "<span>"
		})
	}
	for _, re := range capPatterns[kind] {
		if g := re.FindStringSubmatch(text); g != nil {
			if n, err := strconv.ParseUint(g[1], 10, 64); err == nil && n > 1 {
				return n
			}
		}
	}
	return 0
}

var (
	thousands = regexp.MustCompile(`\b\d{1,3}(?:,\d{3})+\b`)
	kilo      = regexp.MustCompile(`(^|[^0-9a-zA-Z.])(\d+)[kK]\b`)
	// dotted is a count written with dots between its thousands ("2.000",
	// "10.000") before the thing counted: a decimal ("1.5s", "0.25") is never
	// followed by blocks, logs or results, nor has groups of exactly three digits.
	dotted = regexp.MustCompile(`(?i)(^|[^0-9.])([1-9]\d{0,2}(?:\.\d{3})+)(\s*-?\s*(?:blocks?|logs|results)\b)`)
)

// normalizeNumbers writes "10,000", "10.000 blocks" and "10K" as 10000, so one
// pattern reads them.
func normalizeNumbers(s string) string {
	s = dotted.ReplaceAllStringFunc(s, func(m string) string {
		g := dotted.FindStringSubmatch(m)
		return g[1] + strings.ReplaceAll(g[2], ".", "") + g[3]
	})
	s = thousands.ReplaceAllStringFunc(s, func(m string) string { return strings.ReplaceAll(m, ",", "") })
	return kilo.ReplaceAllStringFunc(s, func(m string) string {
		g := kilo.FindStringSubmatch(m)
		n, err := strconv.ParseUint(g[2], 10, 64)
		if err != nil {
			return m
		}
		return g[1] + strconv.FormatUint(n*1000, 10)
	})
}

// maxWait bounds a wait read from an answer: a misread header must not stop a
// network for a day (the provider pool fails over meanwhile).
const maxWait = time.Hour

// waitHint finds a wait in a message: TronGrid's "suspended for 30s", "try again in
// 5 seconds", "retry after 2s", Ankr's "retry in 10s".
var waitHint = regexp.MustCompile(`(?:suspended for|try again in|retry after|retry in|please wait)\s*:?\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?\b`)

// waitOf returns the wait an answer asks for: a header (Retry-After in seconds or
// as a date; RateLimit-Reset / X-RateLimit-Reset in seconds, or as a Unix time),
// else a number in error.data (Infura's backoff_seconds, at its top or under
// "rate"), else a hint in the message; 0 when none.
func waitOf(header http.Header, text string, data json.RawMessage) time.Duration {
	w := headerWait(header)
	if w == 0 {
		w = dataWait(data)
	}
	if w == 0 {
		if g := waitHint.FindStringSubmatch(text); g != nil {
			n, _ := strconv.ParseFloat(g[1], 64)
			unit := time.Second
			switch {
			case strings.HasPrefix(g[2], "ms") || strings.HasPrefix(g[2], "milli"):
				unit = time.Millisecond
			case strings.HasPrefix(g[2], "m"):
				unit = time.Minute
			}
			w = time.Duration(n * float64(unit))
		}
	}
	return min(max(w, 0), maxWait)
}

func headerWait(h http.Header) time.Duration {
	if w := retryAfter(h.Get("Retry-After")); w > 0 {
		return w
	}
	for _, k := range []string{"RateLimit-Reset", "X-RateLimit-Reset", "X-Ratelimit-Reset-After"} {
		v := strings.TrimSpace(h.Get(k))
		if v == "" {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n <= 0 {
			continue
		}
		if n > 1e9 { // a Unix time, not a delay
			return max(time.Until(time.Unix(int64(n), 0)), 0)
		}
		return time.Duration(n * float64(time.Second))
	}
	return 0
}

func dataWait(data json.RawMessage) time.Duration {
	var obj map[string]json.RawMessage
	if len(data) == 0 || json.Unmarshal(data, &obj) != nil {
		return 0
	}
	for _, k := range []string{"backoff_seconds", "retry_after", "retryAfter", "retry_after_seconds"} {
		if n, ok := number(obj[k]); ok && n > 0 {
			return time.Duration(n * float64(time.Second))
		}
	}
	if rate, ok := obj["rate"]; ok {
		return dataWait(rate)
	}
	return 0
}

// retryAfter reads a Retry-After header (seconds or an HTTP date); 0 when absent.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// valuesText is the text of a JSON value's strings (an object's values, not its
// keys), about 4,000 bytes of it at most: what a body says, not how it names its
// fields.
func valuesText(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		if b.Len() >= 4000 {
			return
		}
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte(' ')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return b.String()
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// jsonText renders a JSON value as text: a string as itself, anything else as JSON.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return snippet(raw)
}

// dataText is error.data as text ("" when absent or null): a string as itself,
// anything else as its JSON, at most 2,000 bytes of it.
func dataText(raw json.RawMessage) string {
	if len(raw) == 0 || isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(bytes.TrimSpace(raw))
	}
	if len(s) > 2000 {
		s = s[:2000]
	}
	return s
}

// codeOf reads a JSON-RPC error code, a number or (leniently) a numeric string.
func codeOf(raw json.RawMessage) int {
	if n, ok := number(raw); ok && n == math.Trunc(n) && math.Abs(n) < math.MaxInt32 {
		return int(n)
	}
	return 0
}

func number(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return n, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if n, err := strconv.ParseFloat(strings.TrimSpace(normalizeNumbers(s)), 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
