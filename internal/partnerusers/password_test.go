package partnerusers_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/argon2"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/partnerusers"
)

func TestPasswordRules(t *testing.T) {
	t.Parallel()
	const email = "ada@example.com"
	for _, c := range []struct {
		password string
		ok       bool
	}{
		{"correct horse battery staple", true},
		{"ŝtrange-ünicode-phrase", true},
		{strings.Repeat("é", 12), true},         // 12 characters, 24 bytes
		{strings.Repeat("a", 11), false},        // too short
		{strings.Repeat("x", 129), false},       // too long
		{strings.Repeat("y", 128), false},       // at the ceiling, but one character repeated
		{strings.Repeat(" ", 14), false},        // only spaces
		{"unbelievable", false},                 // on the list, 12 characters
		{"UnBelievable", false},                 // whatever its case
		{"password1234", false},                 // a common one and digits
		{"dragon123456!", false},                // a common one, digits and a symbol
		{"ada@example.com", false},              // the address
		{"ADA@example.com", false},              // the address, another case
		{"password1234x", false},                // not only digits after it, but still easy to guess
		{"aaaaaaaaaaaa", false},                 // one character repeated
		{"abcdefghijklmn", false},               // a sequence
		{"qwertyuiopasdf", false},               // the keyboard
		{"adaexample2024", false},               // the address's words
		{"Lagos Remit 2024", false},             // the partner's name
		{"orbit lantern plum 43", true},         // unrelated words
		{"\xff\xfe not utf-8 text here", false}, // not UTF-8
	} {
		err := partnerusers.CheckPassword(c.password, email, "Lagos Remit")
		if c.ok {
			require.NoError(t, err, "%q", c.password)
			continue
		}
		require.Equal(t, apperr.InvalidRequest, apperr.CodeOf(err), "%q: %v", c.password, err)
		e, _ := apperr.As(err)
		require.NotEmpty(t, e.Details, "%q says which field", c.password)
	}
	for password, says := range map[string]string{
		"aaaaaaaaaaaaaaaa":      "repeats the same characters",
		"abcdefghijklmnop":      "a sequence",
		"lagosremit-lagosremit": "your email address or your partner's name",
		"ada.example.ada!":      "your email address or your partner's name",
	} {
		err := partnerusers.CheckPassword(password, email, "Lagos Remit")
		require.Error(t, err, password)
		require.Contains(t, err.Error(), says, password)
	}
	require.True(t, partnerusers.IsCommon("password"))
	require.True(t, partnerusers.IsCommon("eyphed"), "the list's last entry is loaded")
	require.False(t, partnerusers.IsCommon("a phrase nobody uses"))
}

func TestPasswordHashes(t *testing.T) {
	t.Parallel()
	h, err := partnerusers.HashPassword("correct horse battery staple")
	require.NoError(t, err)
	require.Regexp(t, `^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`, h, "PHC string, OWASP's parameters")
	h2, err := partnerusers.HashPassword("correct horse battery staple")
	require.NoError(t, err)
	require.NotEqual(t, h, h2, "a fresh salt each time")
	for _, c := range []struct {
		hash, password string
		ok             bool
	}{{h, "correct horse battery staple", true}, {h2, "correct horse battery staple", true}, {h, "correct horse battery stapler", false}, {h, "", false}} {
		ok, err := partnerusers.VerifyPassword(c.hash, c.password)
		require.NoError(t, err)
		require.Equal(t, c.ok, ok, c.password)
	}
	require.False(t, partnerusers.NeedsRehash(h))

	// A hash made with other parameters still verifies (they are in the string)
	// and is due for a rehash.
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte("older parameters"), salt, 1, 8*1024, 2, 32)
	old := fmt.Sprintf("$argon2id$v=19$m=8192,t=1,p=2$%s$%s", base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
	ok, err := partnerusers.VerifyPassword(old, "older parameters")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, partnerusers.NeedsRehash(old))

	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=8192,t=1,p=2$c2FsdA$aGFzaA", "$argon2id$v=18$m=8192,t=1,p=2$c2FsdA$aGFzaA",
		"$argon2id$v=19$m=8192,t=0,p=2$c2FsdA$aGFzaA", "$argon2id$v=19$m=8192,t=1,p=2$!!$aGFzaA"} {
		_, err := partnerusers.VerifyPassword(bad, "x")
		require.Error(t, err, bad)
		require.True(t, partnerusers.NeedsRehash(bad), bad)
	}
}
