package webkit

import (
	"html/template"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// Text from outside reads as what it is: every control, format character and
// line or paragraph separator made visible as its escape, nothing else touched.
func TestVisible(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                 "",
		"plain answer":                     "plain answer",
		"שלום 5000 عسکر":                   "שלום 5000 عسکر",
		"line one\nline two\tcolumn":       "line one\nline two\tcolumn",
		"crlf\r\nend":                      "crlf\nend",
		"lone\rreturn":                     `lone\x0dreturn`,
		"\x1b[31mred\x1b[0m":               `\x1b[31mred\x1b[0m`,
		"nul\x00 bell\x07 del\x7f":         `nul\x00 bell\x07 del\x7f`,
		"c1 \u0085 \u009b":                 `c1 \u0085 \u009b`,
		"evil\u202eexe.txt":                `evil\u202eexe.txt`,
		"\u2066isolate\u2069 \u200f\u061c": `\u2066isolate\u2069 \u200f\u061c`,
		"zero\u200bwidth \ufeffbom \u00ad": `zero\u200bwidth \ufeffbom \u00ad`,
		"line\u2028para\u2029":             `line\u2028para\u2029`,
		"tag\U000E0041\U000E007F":          `tag\U000e0041\U000e007f`,
		"bad \xff byte":                    "bad \ufffd byte",
		// Persian and emoji sequences need the (non-)joiners: they stay.
		"می\u200cخواهم 👩\u200d💻": "می\u200cخواهم 👩\u200d💻",
	} {
		require.Equal(t, want, Visible(in), "%q", in)
	}
	s := "a\u202eb"
	require.Equal(t, `a\u202eb`, Visible(&s), "through a pointer")
	require.Empty(t, Visible((*string)(nil)))

	// No character Visible lets through acts instead of being read.
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		out := Visible(string(r))
		for _, c := range out {
			acts := unicode.Is(unicode.Cc, c) && c != '\t' && c != '\n' ||
				unicode.Is(unicode.Cf, c) && c != '\u200c' && c != '\u200d' || c == '\u2028' || c == '\u2029'
			require.False(t, acts, "U+%04X shown as %q", r, out)
		}
	}
}

// Typed text goes in its own isolate: <bdi> in an element, U+2068 … U+2069
// where no element can go; escaped either way, nothing for nothing.
func TestIsolate(t *testing.T) {
	t.Parallel()
	require.Equal(t, template.HTML("<bdi>999 שלום</bdi>"), Isolate("999 שלום"))
	require.Equal(t, template.HTML("<bdi>&lt;b&gt;A &amp; B&#39;s&lt;/b&gt;</bdi>"), Isolate("<b>A & B's</b>"))
	ref := "5000 עסקה"
	require.Equal(t, template.HTML("<bdi>5000 עסקה</bdi>"), Isolate(&ref), "through a pointer")
	require.Empty(t, Isolate((*string)(nil)))
	require.Empty(t, Isolate(""))
	require.Equal(t, template.HTML("<bdi><bdi>x</bdi> y</bdi>"), Isolate(Sentence("%s y", "x")), "safe HTML is not escaped again")
	require.Equal(t, "\u2068999 שלום\u2069", IsolateText("999 שלום"))
	require.Empty(t, IsolateText(""))
	require.Equal(t, template.HTML(`<bdi>\u202e\x1b[31m</bdi>`), Foreign("\u202e\x1b[31m"))
}

// A sentence of the page's words sets each text it names in its own isolate;
// numbers go in as they are and the words themselves are escaped.
func TestSentence(t *testing.T) {
	t.Parallel()
	got := Sentence("%s · %s · %s USDT → %d rows <ok>", "5000 עסקה", "999 שלום", Amount("100.000000"), 3)
	require.Equal(t, template.HTML("<bdi>5000 עסקה</bdi> · <bdi>999 שלום</bdi> · <bdi>100.000000</bdi> USDT → 3 rows &lt;ok&gt;"), got)
	require.Equal(t, template.HTML("by <bdi>&lt;script&gt;</bdi>, <bdi>x</bdi>"), Sentence("by %s, %s", "<script>", Isolate("x")))
	var none *string
	require.Equal(t, template.HTML("note: ."), Sentence("note: %s.", none))
}

// In a page, the template functions do the same, and a refusal's words and
// detail show their controls.
func TestIsolateInTemplates(t *testing.T) {
	t.Parallel()
	page := template.Must(template.New("p").Funcs(Funcs()).Parse(
		`<p title="of {{isolateText .Name}}">{{isolate .Name}} · {{.Amount}} USDT</p><code>{{foreign .Answer}}</code><div>{{problem .Problem}}</div>`))
	var b strings.Builder
	require.NoError(t, page.Execute(&b, map[string]any{"Name": "999 שלום", "Amount": "100.000000", "Answer": "\u202eok\x1b[31m",
		"Problem": Problem{Words: "Refused \u202eexe", Detail: "HTTP\x1b 500"}}))
	require.Equal(t, `<p title="of `+"\u2068"+`999 שלום`+"\u2069"+`"><bdi>999 שלום</bdi> · 100.000000 USDT</p>`+
		`<code><bdi>\u202eok\x1b[31m</bdi></code>`+
		`<div>Refused \u202eexe<details class="detail"><summary>Details</summary><code>HTTP\x1b 500</code></details></div>`, b.String())
	require.Equal(t, template.HTML("<bdi>x</bdi>"), problemHTML(Isolate("x")), "a Sentence as it is")
}
