package webkit

import (
	"fmt"
	"html/template"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text people typed (a partner's or an operator's name, an email, a merchant
// reference, a note, a bank reference, a webhook URL) can be written right to
// left, and the bidirectional algorithm lets a right-to-left run take the
// digits beside it: "100.00 · 999 שלום · 5000 USDT" can read as another amount.
// So both sites set every such text in a direction isolate (<bdi>, or U+2068 …
// U+2069 where no element can go: an attribute, an <option>, the page's
// title), where its direction cannot spill onto the amounts, ids and words
// around it. Text that came from outside the service (a webhook receiver's
// answer, an error string, a screening list's source and entries) is shown
// with its control and format characters made visible (Visible) as well: no
// U+202E reversing it, no escape sequence, no invisible character hiding part
// of it.

// Isolate is v (text a person typed; a pointer reads as what it points at)
// escaped inside <bdi>: its direction stays inside. Nothing for empty text.
// Already safe HTML (a Sentence) is isolated as it is, not escaped again.
func Isolate(v any) template.HTML {
	var s string
	if h, ok := v.(template.HTML); ok {
		s = string(h)
	} else {
		s = template.HTMLEscapeString(text(v))
	}
	if s == "" {
		return ""
	}
	return template.HTML("<bdi>" + s + "</bdi>")
}

// IsolateText is v between U+2068 FIRST STRONG ISOLATE and U+2069 POP
// DIRECTIONAL ISOLATE: the isolate where no element can go (an attribute such
// as aria-label or title, an <option>, the page's <title>). Nothing for empty
// text.
func IsolateText(v any) string {
	s := text(v)
	if s == "" {
		return ""
	}
	return "\u2068" + s + "\u2069"
}

// Foreign is text from outside the service (a receiver's answer, an error, a
// list's entry) as a page shows it: Visible, then Isolate.
func Foreign(v any) template.HTML { return Isolate(Visible(v)) }

// Visible is v with every character that would act instead of being read made
// visible as its escape ("\x1b", "\u202e", "\U000e0041"): the C0 and C1
// controls and U+007F (category Cc; a tab and a line break stay, "\r\n" as
// "\n"), the format characters (Cf: the bidi embeddings, overrides and
// isolates, the zero-width space, tags, the BOM) and the line and paragraph
// separators U+2028 and U+2029. The zero-width non-joiner and joiner (U+200C,
// U+200D) stay, as the requests' text rule lets them through: Persian, Indic
// scripts and emoji sequences need them, and they reorder nothing. Bytes that
// are not UTF-8 read as U+FFFD.
func Visible(v any) string {
	s := text(v)
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
			// The "\n" after it stays: one line break.
		case r == utf8.RuneError:
			b.WriteRune(utf8.RuneError)
		case !hidden(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

// hidden reports whether r acts instead of being read (Visible): a control
// other than a tab or a line break, a format character other than U+200C and
// U+200D, U+2028 or U+2029.
func hidden(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\u200c' || r == '\u200d':
		return false
	case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r):
		return true
	}
	return r == '\u2028' || r == '\u2029'
}

// Sentence is a sentence of the page's own words (format, escaped) with the
// values it names set in it: text (any string, or a pointer to one) each in
// its own isolate (Isolate), numbers and booleans as they are, already safe
// HTML (an Isolate, a Sentence) as it is, anything else escaped. Its verbs are
// %s, %v, and %d for numbers. A notice, a confirmation's subject or a row's
// words built of names and references use it, so no name moves the amounts
// beside it.
func Sentence(format string, args ...any) template.HTML {
	set := make([]any, len(args))
	for i, a := range args {
		set[i] = sentenceArg(a)
	}
	return template.HTML(fmt.Sprintf(template.HTMLEscapeString(format), set...))
}

// sentenceArg is one value of a Sentence as it goes in it.
func sentenceArg(a any) any {
	if h, ok := a.(template.HTML); ok {
		return string(h)
	}
	rv := reflect.ValueOf(a)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return ""
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return ""
	}
	switch rv.Kind() {
	case reflect.String:
		return string(Isolate(rv.String()))
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return rv.Interface()
	}
	return template.HTMLEscapeString(fmt.Sprint(rv.Interface()))
}
