// Package textrule is the one rule every string sent to the service keeps: valid
// UTF-8, no control characters, no U+FFFD, and no format controls (Unicode
// category Cf: the bidirectional overrides and isolates such as U+202E and
// U+2066, zero-width spaces, U+FEFF). Format controls are invisible and reorder
// or hide what a person reads: a reference holding U+202E makes the amounts
// beside it in a page read reversed (150000.00 as "00.000051"). The APIs apply it
// to every string of a request (httpkit.CheckRequest), the domain to what it
// validates itself (merchant references, addresses typed in the dashboard), so
// both give the error the rule always gave for control characters.
package textrule

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Refused reports whether r may not appear in text sent to the service: a
// control character (U+0000–U+001F, U+007F–U+009F), the line and paragraph
// separators (U+2028, U+2029: they break a line where a reader sees one field, and
// end a JavaScript string in some readers), or a format control, except the
// zero-width non-joiner and joiner (U+200C, U+200D), which Persian, Indic scripts
// and emoji sequences need and which reorder nothing.
func Refused(r rune) bool {
	if r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 {
		return true
	}
	return r >= 0xad && unicode.Is(unicode.Cf, r) && r != 0x200c && r != 0x200d
}

// Problem returns why s breaks the rule, or "" when it keeps it: "must be valid
// UTF-8", "must not contain control characters (found U+202E)" (format controls
// included: to a reader they are the same kind of thing), or "must not contain
// U+FFFD (…)".
func Problem(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	for _, r := range s {
		switch {
		case Refused(r):
			return "must not contain control characters (found U+" + hex(r) + ")"
		case r == utf8.RuneError:
			return "must not contain U+FFFD (a byte sequence that was not text)"
		}
	}
	return ""
}

// Has reports whether s holds a refused character (Refused).
func Has(s string) bool { return strings.IndexFunc(s, Refused) >= 0 }

// hex is r as four (or more) upper-case hex digits.
func hex(r rune) string {
	h := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	if len(h) < 4 {
		h = strings.Repeat("0", 4-len(h)) + h
	}
	return h
}
