package webkit

import (
	"fmt"
	"reflect"
	"strings"
)

// stateWords is what the sites print for a state or kind an API answers with
// (a transaction's status, a back-office stage, a delivery, a key, a provider,
// a screening, a refund task, a team member): one table for both sites, so a
// state reads the same wherever it appears. A code not listed reads as its
// words (underscores as spaces); the code itself stays on the element's title
// and class.
var stateWords = map[string]string{
	// Transactions (the partner API's lifecycle).
	"awaiting_deposit":   "waiting for the deposit",
	"deposit_confirming": "deposit confirming",
	"order_filled":       "sold, settling",
	"completed":          "completed",
	"cancelled":          "cancelled",
	"failed":             "failed",
	"expired":            "expired",
	"refunded":           "refunded",
	// The back office's stages.
	"awaiting_fill":       "awaiting the sale",
	"awaiting_settlement": "awaiting settlement",
	"awaiting_payout":     "awaiting payout",
	"confirming_too_long": "confirming too long",
	// Webhook deliveries.
	"pending":   "pending",
	"delivered": "delivered",
	// Keys, users, providers.
	"active":        "active",
	"expiring":      "expiring",
	"revoked":       "revoked",
	"invited":       "invited",
	"disabled":      "disabled",
	"standby":       "standby",
	"failing":       "failing",
	"rate_limited":  "rate limited",
	"lagging":       "lagging",
	"behind":        "behind its own head",
	"syncing":       "syncing",
	"no_logs":       "no logs served",
	"action_needed": "needs a person",
	// A network's finality rule (the console's chains).
	"finality_tag":           "finalized block",
	"finality_confirmations": "confirmations only",
	"finality_unknown":       "unknown",
	// Deposits on chain.
	"confirmed": "confirmed",
	"reorged":   "undone by a reorganisation",
	"unmatched": "unmatched",
	// Screening and refund tasks.
	"held":     "held for review",
	"unknown":  "cannot be screened",
	"clear":    "clear",
	"hit":      "named on a list",
	"release":  "released",
	"block":    "blocked",
	"open":     "open",
	"resolved": "resolved",
	"credited": "credited",
	"excess":   "excess",
	"short":    "short payment",
	"dust":     "dust",
}

// reasonWords is what the status history's reasons ("actor:action", the
// lifecycle table's) say in words.
var reasonWords = map[string]string{
	"transaction:created": "created",
	"partner:cancelled":   "cancelled by the partner",
	"system:expired":      "expired before it was paid",
	"deposit:partial":     "part of the amount received",
	"deposit:detected":    "deposit received",
	"deposit:accepted":    "short payment accepted",
	"deposit:confirmed":   "deposit confirmed",
	"order:filled":        "USDT sold",
	"order:settled":       "sale settled",
	"deposit:failed":      "deposit failed",
	"order:failed":        "sale failed",
	"deposit:reorged":     "deposit undone by a chain reorganisation",
	"deposit:refunded":    "deposit sent back",
	"payout:settled":      "paid out",
	"review:failed":       "failed",
}

// text is v as a string: the value a pointer points at ("" for nil), any
// string-like type as its string. Never a pointer's address.
func text(v any) string {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return ""
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return ""
	}
	if rv.Kind() == reflect.String {
		return rv.String()
	}
	return fmt.Sprint(rv.Interface())
}

// Words is an identifier with its underscores as spaces ("merchant
// reference"), for a code no table names.
func Words(code any) string { return strings.ReplaceAll(text(code), "_", " ") }

// StateWords is a state's code in words (stateWords).
func StateWords(code any) string {
	s := text(code)
	if w, ok := stateWords[s]; ok {
		return w
	}
	return Words(s)
}

// Reason is a status-history reason in words (reasonWords), or its own words
// when it is not one of the table's.
func Reason(reason any) string {
	s := text(reason)
	if w, ok := reasonWords[s]; ok {
		return w
	}
	return strings.NewReplacer("_", " ", ":", ": ").Replace(s)
}

// Change is a status-history row's move in words: "created as …" (no status
// before), "still …" (a row that keeps the status, such as a confirmation), or
// "… → …".
func Change(from, to any) string {
	f, t := text(from), text(to)
	switch {
	case f == "":
		return "created as " + StateWords(t)
	case f == t:
		return "still " + StateWords(t)
	}
	return StateWords(f) + " → " + StateWords(t)
}

// Count writes n things in words as people write them: "1 transaction",
// "3 transactions" (one is singular, every other count plural: plural is the
// noun with an s unless given).
func Count(n int, noun string, plural ...string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	p := noun + "s"
	if len(plural) > 0 {
		p = plural[0]
	}
	return fmt.Sprintf("%d %s", n, p)
}

// PartnerLabel is how a partner is named where several may share a name (a
// selector of every partner): its name, and the start of its id after it when
// another partner of others has the same name, so "Acme Pay · 3f2a9c1e" and
// "Acme Pay · 77b0d4aa" can be told apart.
func PartnerLabel(name, id string, others map[string]int) string {
	if others[name] > 1 && len(id) >= 8 {
		return name + " · " + id[:8]
	}
	return name
}
