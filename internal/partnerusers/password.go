package partnerusers

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed" // the common-password list
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	zxcvbn "github.com/ccojocar/zxcvbn-go"
	"github.com/ccojocar/zxcvbn-go/match"
	"golang.org/x/crypto/argon2"

	"partnerd/internal/kit/apperr"
)

// The password rules (NIST SP 800-63B §5.1.1.2: a length floor, a generous
// ceiling, and a list of passwords known to be common, no composition rules).
const (
	MinPasswordLength = 12  // characters (Unicode code points)
	MaxPasswordLength = 128 // characters; bounds the work of hashing one
)

// commonPasswords is SecLists' Passwords/Common-Credentials/10k-most-common.txt
// (github.com/danielmiessler/SecLists, MIT licence): the 10,000 passwords most
// often found in public breach corpora, one a line, most common first.
//
//go:embed common-passwords.txt
var commonPasswords string

var common = sync.OnceValue(func() map[string]bool {
	m := make(map[string]bool, 10000)
	sc := bufio.NewScanner(strings.NewReader(commonPasswords))
	for sc.Scan() {
		if w := strings.TrimSpace(sc.Text()); w != "" {
			m[strings.ToLower(w)] = true
		}
	}
	return m
})

// IsCommon reports whether password is on the common list, whatever its case, or
// is one of them followed only by digits and symbols ("password1234!",
// "dragon123456"): the first variations a guesser tries.
func IsCommon(password string) bool {
	p := strings.ToLower(password)
	if common()[p] {
		return true
	}
	stem := strings.TrimRightFunc(p, func(r rune) bool { return !unicode.IsLetter(r) })
	return stem != "" && stem != p && common()[stem]
}

// MinPasswordScore is the least zxcvbn score (0 to 4) a new password must reach:
// 3 is "safely unguessable" to zxcvbn (about 10^10 guesses against a slow hash
// such as ours, offline), the level its authors advise for a site's floor.
const MinPasswordScore = 3

// CheckPassword applies the password rules to a new password of the user with
// address email, whose partner is named by the others (what a guesser who knows
// the user tries first): the length, the common list, then its strength as
// zxcvbn estimates it (github.com/ccojocar/zxcvbn-go, the maintained port gosec
// uses) with the address's and the names' words as the user's own. Errors:
// InvalidRequest on /password saying in words which rule failed.
func CheckPassword(password, email string, others ...string) error {
	bad := func(msg, hint string) error { return apperr.Field(apperr.InvalidRequest, msg, "/password", hint) }
	if !utf8.ValidString(password) {
		return bad("The password is not valid UTF-8 text.", "UTF-8 text")
	}
	n := utf8.RuneCountInString(password)
	switch {
	case n < MinPasswordLength:
		return bad(fmt.Sprintf("The password is too short: at least %d characters.", MinPasswordLength),
			fmt.Sprintf("%d to %d characters", MinPasswordLength, MaxPasswordLength))
	case n > MaxPasswordLength:
		return bad(fmt.Sprintf("The password is too long: at most %d characters.", MaxPasswordLength),
			fmt.Sprintf("%d to %d characters", MinPasswordLength, MaxPasswordLength))
	case strings.TrimSpace(password) == "":
		return bad("The password is only spaces.", "a passphrase of words")
	case IsCommon(password):
		return bad("This password is one of the most common ones; choose another.", "not a common password")
	}
	lp := strings.ToLower(password)
	if e := strings.ToLower(email); e != "" && (lp == e || lp == strings.SplitN(e, "@", 2)[0]) {
		return bad("The password must not be the email address.", "not the email address")
	}
	inputs := userWords(email, others...)
	strength := zxcvbn.PasswordStrength(password, inputs)
	if strength.Score < MinPasswordScore {
		return bad(weakness(strength.MatchSequence), "a longer passphrase of unrelated words")
	}
	return nil
}

// userWords are the words a guesser who knows the user tries: the address, its
// parts, and each name and its words, in lower case.
func userWords(email string, names ...string) []string {
	var out []string
	for _, s := range append([]string{email}, names...) {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			continue
		}
		out = append(out, s)
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if utf8.RuneCountInString(w) >= 3 {
				out = append(out, w)
			}
		}
	}
	return out
}

// weakness says in words why a password is easy to guess: what the weakest part
// zxcvbn found in it is.
func weakness(seq []match.Match) string {
	const advice = " Choose a longer passphrase of unrelated words."
	var worst *match.Match
	for i := range seq {
		if seq[i].Pattern != "bruteforce" && (worst == nil || len(seq[i].Token) > len(worst.Token)) {
			worst = &seq[i]
		}
	}
	what := "This password is easy to guess."
	if worst != nil {
		switch {
		case strings.HasPrefix(worst.DictionaryName, "user_inputs"):
			what = "This password is easy to guess: it is made of your email address or your partner's name."
		case worst.Pattern == "repeat":
			what = "This password is easy to guess: it repeats the same characters."
		case worst.Pattern == "sequence":
			what = "This password is easy to guess: it is a sequence such as abcd or 1234."
		case worst.Pattern == "spatial":
			what = "This password is easy to guess: it follows the keyboard, as qwerty does."
		case worst.Pattern == "date":
			what = "This password is easy to guess: it is mostly a date."
		case worst.Pattern == "dictionary":
			what = "This password is easy to guess: it is mostly a common word or name."
		}
	}
	return what + advice
}

// Argon2id parameters: OWASP's Password Storage Cheat Sheet's first recommended
// configuration ("a minimum configuration of 19 MiB of memory, an iteration count
// of 2, and 1 degree of parallelism"), a 16-byte salt (RFC 9106 §3.1) and a
// 32-byte tag. Each hash carries its parameters in the PHC string format, so
// raising them later leaves stored hashes verifiable (NeedsRehash tells which to
// redo at the next sign-in).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024 // KiB
	argonThreads = 1
	argonSaltLen = 16
	argonKeyLen  = 32
)

// HashPassword returns password's argon2id hash in the PHC string format:
// $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash> (unpadded standard base64).
func HashPassword(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", errors.Join(errors.New("read random salt"), err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// phc is a parsed argon2id hash.
type phc struct {
	memory     uint32
	time       uint32
	threads    uint8
	salt, hash []byte
}

func parsePHC(s string) (*phc, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return nil, errors.New("not an argon2id PHC string")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return nil, fmt.Errorf("argon2id version %q unsupported", parts[2])
	}
	var p phc
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &p.threads); err != nil || p.time == 0 || p.threads == 0 {
		return nil, fmt.Errorf("argon2id parameters %q unreadable", parts[3])
	}
	var err1, err2 error
	p.salt, err1 = base64.RawStdEncoding.DecodeString(parts[4])
	p.hash, err2 = base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(p.hash) == 0 {
		return nil, errors.New("argon2id salt or hash unreadable")
	}
	return &p, nil
}

// VerifyPassword reports whether password matches hash (a PHC string made by
// HashPassword with any parameters), comparing in constant time. A hash it
// cannot read is an error.
func VerifyPassword(hash, password string) (bool, error) {
	p, err := parsePHC(hash)
	if err != nil {
		return false, err
	}
	verifications.Add(1)
	got := argon2.IDKey([]byte(password), p.salt, p.time, p.memory, p.threads, uint32(len(p.hash)))
	return subtle.ConstantTimeCompare(got, p.hash) == 1, nil
}

// NeedsRehash reports whether hash was made with other parameters than today's.
func NeedsRehash(hash string) bool {
	p, err := parsePHC(hash)
	return err != nil || p.memory != argonMemory || p.time != argonTime || p.threads != argonThreads ||
		len(p.salt) != argonSaltLen || len(p.hash) != argonKeyLen
}

// dummyHash is verified against when no user matches, so an unknown address
// costs the same time as a wrong password.
var dummyHash = sync.OnceValue(func() string {
	h, err := HashPassword("not a password anyone has: " + rand.Text())
	if err != nil {
		panic(err)
	}
	return h
})

// randIntn returns a uniform random int in [0, n) from crypto/rand.
func randIntn(n int) int {
	limit := 256 - 256%n // reject the biased tail
	b := make([]byte, 1)
	for {
		if _, err := rand.Read(b); err != nil {
			panic(err) // crypto/rand.Read never fails on supported platforms
		}
		if int(b[0]) < limit {
			return int(b[0]) % n
		}
	}
}

// HashSlots is how many argon2id computations (19 MiB each) run at once in this
// process: sign-in is work any stranger can start, so its memory is bounded
// (HashSlots × 19 MiB) whatever the number of parallel requests. A request waits
// up to hashWait for a slot, then is refused with ErrBusy.
const HashSlots = 4

const hashWait = 2 * time.Second

var hashSlots = make(chan struct{}, HashSlots)

// ErrBusy answers a password check or change when every hash slot stayed taken:
// the caller answers 503 with Retry-After, and nothing was checked.
var ErrBusy = apperr.New(apperr.ServiceUnavailable, "Too many sign-ins at once; try again in a moment.")

// hashSlot takes a hash slot (ErrBusy after hashWait, or ctx's error) and returns
// its release.
func hashSlot(ctx context.Context) (func(), error) {
	select {
	case hashSlots <- struct{}{}:
		return func() { <-hashSlots }, nil
	default:
	}
	t := time.NewTimer(hashWait)
	defer t.Stop()
	select {
	case hashSlots <- struct{}{}:
		return func() { <-hashSlots }, nil
	case <-t.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// verifications counts argon2id verifications, so a test can hold that an
// unknown address costs what a known one does (export_test.go).
var verifications atomic.Int64
