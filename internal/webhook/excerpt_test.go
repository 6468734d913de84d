package webhook

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestExcerpt(t *testing.T) {
	t.Parallel()
	x := func(n int) string { return strings.Repeat("x", n) }
	for name, c := range map[string]struct{ in, want string }{
		"empty":                    {"", ""},
		"short":                    {`{"ok":true}`, `{"ok":true}`},
		"exactly 256":              {x(256), x(256)},
		"longer is cut":            {x(300), x(256)},
		"a whole last character":   {x(254) + "é" + "tail", x(254) + "é"},
		"a 2-byte character cut":   {x(255) + "é", x(255)},
		"a 3-byte character cut":   {x(254) + "€", x(254)},
		"a 4-byte character cut":   {x(253) + "😀", x(253)},
		"invalid bytes replaced":   {"a\xffb\xc3", "a\uFFFDb"},
		"NUL replaced":             {"a\x00b", "a\uFFFDb"},
		"invalid inside, not cut":  {"\xc3(" + x(10), "\uFFFD(" + x(10)},
		"a lone continuation byte": {x(255) + "\x80", x(255) + "\uFFFD"},
	} {
		t.Run(name, func(t *testing.T) {
			got := Excerpt([]byte(c.in))
			require.Equal(t, c.want, got)
			require.True(t, utf8.ValidString(got))
			require.NotContains(t, got, "\x00")
		})
	}
}
