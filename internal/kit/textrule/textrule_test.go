package textrule_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/textrule"
)

// Control characters and format controls give the same error; joiners, plain
// text in any script and emoji pass.
func TestProblem(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{
		"order-1\u202e00.000051":  "must not contain control characters (found U+202E)",
		"a\u2066b":                "must not contain control characters (found U+2066)",
		"a\u200bb":                "must not contain control characters (found U+200B)",
		"\ufeffref":               "must not contain control characters (found U+FEFF)",
		"a\x00b":                  "must not contain control characters (found U+0000)",
		"a\u0085b":                "must not contain control characters (found U+0085)",
		"a\u00adb":                "must not contain control characters (found U+00AD)",
		"line\u2028break":         "must not contain control characters (found U+2028)",
		"para\u2029break":         "must not contain control characters (found U+2029)",
		"\xff":                    "must be valid UTF-8",
		"a\ufffd":                 "must not contain U+FFFD (a byte sequence that was not text)",
		"Ünal – مرجع 12 👩\u200d💻": "",
		"می\u200cخواهم":           "",
	} {
		require.Equal(t, want, textrule.Problem(s), "%q", s)
		require.Equal(t, strings.HasPrefix(want, "must not contain control"), textrule.Has(s), "%q", s)
	}
}
