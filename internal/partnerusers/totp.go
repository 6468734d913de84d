package partnerusers

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"partnerd/internal/kit/apperr"
)

// The second factor: TOTP (RFC 6238) as every authenticator app reads it from an
// otpauth:// URL: HMAC-SHA1, 6 digits, 30-second steps, a 160-bit secret (RFC
// 4226 §4's recommended length). A code is accepted one step early or late
// (clock drift, RFC 6238 §5.2), and only for a step later than the last one
// accepted, so a code seen once cannot be replayed.
const (
	totpPeriod = 30
	totpSkew   = 1
	totpDigits = otp.DigitsSix
)

// RecoveryCodes is how many one-time recovery codes a user holds.
const RecoveryCodes = 10

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Skew: 0, Digits: totpDigits, Algorithm: otp.AlgorithmSHA1}

// Enrollment is a second factor being set up: the secret for an authenticator
// app, as text and as its otpauth:// URL (for a QR code).
type Enrollment struct {
	Secret string
	URL    string
}

// EnrollTOTP starts setting up partner's active user id's second factor: a new
// secret, kept until ConfirmTOTP proves the app holds it (a pending one is
// replaced). Errors: NotFound, InvalidStateTransition (not active, or a second
// factor already on).
func (s *Service) EnrollTOTP(ctx context.Context, partnerID, id uuid.UUID) (*Enrollment, error) {
	var e Enrollment
	_, err := s.change(ctx, partnerID, id, func(_ context.Context, _ Tx, u *User, _ time.Time) error {
		if u.Status != Active {
			return apperr.New(apperr.InvalidStateTransition, "This user is "+string(u.Status)+".")
		}
		if u.TOTPEnabled() {
			return apperr.New(apperr.InvalidStateTransition, "The second factor is already on.")
		}
		key, err := totp.Generate(totp.GenerateOpts{Issuer: s.issuer, AccountName: u.Email, Period: totpPeriod,
			SecretSize: 20, Digits: totpDigits, Algorithm: otp.AlgorithmSHA1, Rand: rand.Reader})
		if err != nil {
			return err
		}
		secret := key.Secret()
		u.TOTPSecret, u.TOTPLastStep = &secret, nil
		e = Enrollment{Secret: secret, URL: key.URL()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// PendingTOTP returns the second factor partner's user id is setting up (the
// secret EnrollTOTP made, not yet confirmed), to show again after a wrong first
// code. Errors: NotFound, InvalidStateTransition (none pending).
func (s *Service) PendingTOTP(ctx context.Context, partnerID, id uuid.UUID) (*Enrollment, error) {
	u, err := s.store.PartnerUser(ctx, partnerID, id)
	if err != nil {
		return nil, err
	}
	if u.TOTPSecret == nil || u.TOTPEnabled() {
		return nil, apperr.New(apperr.InvalidStateTransition, "No second factor is being set up; start again.")
	}
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(*u.TOTPSecret)
	if err != nil {
		return nil, err
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: s.issuer, AccountName: u.Email, Period: totpPeriod,
		Secret: raw, Digits: totpDigits, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return nil, err
	}
	return &Enrollment{Secret: key.Secret(), URL: key.URL()}, nil
}

// ConfirmTOTP turns the second factor on with a first code from the app and
// returns the user's RecoveryCodes one-time recovery codes (shown once; only
// their hashes are kept). Errors: NotFound, InvalidStateTransition (no
// enrolment pending), Unauthorized (a wrong code).
func (s *Service) ConfirmTOTP(ctx context.Context, partnerID, id uuid.UUID, code string) ([]string, error) {
	var codes []string
	_, err := s.change(ctx, partnerID, id, func(ctx context.Context, tx Tx, u *User, now time.Time) error {
		if u.Status != Active || u.TOTPSecret == nil || u.TOTPEnabled() {
			return apperr.New(apperr.InvalidStateTransition, "No second factor is being set up; start again.")
		}
		step, ok := matchStep(*u.TOTPSecret, code, now)
		if !ok {
			return errCode()
		}
		u.TOTPEnabledAt, u.TOTPLastStep = &now, &step
		var err error
		codes, err = s.newRecoveryCodes(ctx, tx, u.ID, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return codes, nil
}

// RegenerateRecoveryCodes replaces partner's user id's recovery codes (the old
// ones stop working) and returns the new ones, shown once. Errors: NotFound,
// InvalidStateTransition (no second factor).
func (s *Service) RegenerateRecoveryCodes(ctx context.Context, partnerID, id uuid.UUID) ([]string, error) {
	var codes []string
	_, err := s.change(ctx, partnerID, id, func(ctx context.Context, tx Tx, u *User, now time.Time) error {
		if !u.TOTPEnabled() {
			return apperr.New(apperr.InvalidStateTransition, "The second factor is off.")
		}
		var err error
		codes, err = s.newRecoveryCodes(ctx, tx, u.ID, now)
		return err
	})
	return codes, err
}

// RecoveryCodesLeft counts partner's user id's unused recovery codes.
func (s *Service) RecoveryCodesLeft(ctx context.Context, partnerID, id uuid.UUID) (int, error) {
	if _, err := s.store.PartnerUser(ctx, partnerID, id); err != nil {
		return 0, err
	}
	return s.store.PartnerRecoveryCodesLeft(ctx, id)
}

func errCode() error {
	return apperr.New(apperr.Unauthorized, "The code is wrong or was already used.")
}

// VerifyTOTP checks a sign-in's code from u's authenticator app: right within
// one step of now, and of a step later than the last accepted (the step is then
// recorded, in one conditional write, so two sign-ins with one code cannot both
// pass). Errors: Unauthorized (wrong, replayed, or no second factor on).
func (s *Service) VerifyTOTP(ctx context.Context, u *User, code string) error {
	if !u.TOTPEnabled() || u.TOTPSecret == nil || u.Status != Active {
		return errCode()
	}
	step, ok := matchStep(*u.TOTPSecret, code, s.now())
	if !ok {
		return errCode()
	}
	advanced, err := s.store.AdvancePartnerTOTPStep(ctx, u.ID, step)
	if err != nil {
		return err
	}
	if !advanced {
		return errCode()
	}
	return nil
}

// UseRecoveryCode signs u in with one of their recovery codes instead of a TOTP
// code; the code then stops working. Errors: Unauthorized.
func (s *Service) UseRecoveryCode(ctx context.Context, u *User, code string) error {
	if !u.TOTPEnabled() || u.Status != Active {
		return errCode()
	}
	ok, err := s.store.UsePartnerRecoveryCode(ctx, u.ID, HashToken(normalCode(code)), s.now())
	if err != nil {
		return err
	}
	if !ok {
		return errCode()
	}
	return nil
}

// matchStep returns the time step, within totpSkew of at, whose code is code.
func matchStep(secret, code string, at time.Time) (int64, bool) {
	code = strings.TrimSpace(code)
	if len(code) != totpDigits.Length() {
		return 0, false
	}
	now := at.Unix() / totpPeriod
	for d := int64(-totpSkew); d <= totpSkew; d++ {
		want, err := totp.GenerateCodeCustom(secret, time.Unix((now+d)*totpPeriod, 0), totpOpts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return now + d, true
		}
	}
	return 0, false
}

// recoveryAlphabet leaves out look-alike characters (0/o, 1/l/i).
const recoveryAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// newRecoveryCodes replaces the user's codes with RecoveryCodes new ones: 10
// characters of recoveryAlphabet each (about 49 bits), shown as xxxxx-xxxxx.
func (s *Service) newRecoveryCodes(ctx context.Context, tx Tx, userID uuid.UUID, now time.Time) ([]string, error) {
	codes := make([]string, RecoveryCodes)
	hashes := make([]string, RecoveryCodes)
	for i := range codes {
		b := make([]byte, 10)
		for j := range b {
			b[j] = recoveryAlphabet[randIntn(len(recoveryAlphabet))]
		}
		codes[i] = string(b[:5]) + "-" + string(b[5:])
		hashes[i] = HashToken(normalCode(codes[i]))
	}
	if err := tx.ReplacePartnerRecoveryCodes(ctx, userID, hashes, now); err != nil {
		return nil, err
	}
	return codes, nil
}

// normalCode is a recovery code as hashed: lower case, without spaces or dashes.
func normalCode(code string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(code)))
}
