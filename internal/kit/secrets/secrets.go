// Package secrets encrypts the secrets the service must read back (TOTP
// secrets, webhook signing secrets) before they are stored: AES-256-GCM from the
// standard library, with a key id stored beside each ciphertext so the keys can
// rotate (partnerd secrets rotate re-encrypts everything under the current key).
// A reader of the database, or of a backup, sees neither the secrets nor a way
// to sign a webhook or pass a second factor.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Keyring is the keys secrets are sealed with: Current seals, every key opens
// what it sealed.
type Keyring struct {
	current string
	keys    map[string]cipher.AEAD
	dev     bool
}

// DevelopmentKeyID names the built-in development key: staging runs without
// SECRETS_KEYS on it (with a warning); production refuses it.
const DevelopmentKeyID = "dev"

// developmentKey is public (it is in the source): it keeps secrets out of plain
// sight in staging and nothing more.
var developmentKey = []byte("partnerd-staging-only-public-key")

// Parse reads the SECRETS_KEYS setting: comma-separated id:key pairs, each key
// 32 bytes in standard base64, the first the current one (it seals; the others
// only open, until a rotation has moved every secret off them).
func Parse(setting string) (*Keyring, error) {
	k := &Keyring{keys: map[string]cipher.AEAD{}}
	for _, item := range strings.Split(setting, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok || id == "" || strings.ContainsAny(id, " :") || len(id) > 32 {
			return nil, errors.New("want id:base64key[,id:base64key…], ids of up to 32 characters without spaces or colons")
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("key %q: want 32 bytes in standard base64 (openssl rand -base64 32)", id)
		}
		if id == DevelopmentKeyID {
			return nil, fmt.Errorf("key id %q is the built-in development key's", id)
		}
		if _, dup := k.keys[id]; dup {
			return nil, fmt.Errorf("key id %q appears twice", id)
		}
		k.keys[id] = aead(raw)
		if k.current == "" {
			k.current = id
		}
	}
	return k, nil
}

// Development is the built-in development key alone (staging without
// SECRETS_KEYS, tests).
func Development() *Keyring {
	return &Keyring{current: DevelopmentKeyID, keys: map[string]cipher.AEAD{DevelopmentKeyID: aead(developmentKey)}, dev: true}
}

// WithDevelopment returns k able to open what the development key sealed too
// (a staging database moving to its own keys); k still seals with its current key.
func (k *Keyring) WithDevelopment() *Keyring {
	out := &Keyring{current: k.current, keys: map[string]cipher.AEAD{DevelopmentKeyID: aead(developmentKey)}, dev: k.dev}
	for id, a := range k.keys {
		out.keys[id] = a
	}
	return out
}

func aead(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // 32 bytes: never
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return a
}

// Current is the id of the key that seals.
func (k *Keyring) Current() string { return k.current }

// IsDevelopment reports whether the current key is the built-in development key.
func (k *Keyring) IsDevelopment() bool { return k.dev }

// Seal encrypts plain under the current key, bound to context (where the secret
// lives, such as its table and row: a ciphertext moved to another row does not
// open), and returns the key's id and the sealed text (base64 of nonce and
// ciphertext).
func (k *Keyring) Seal(plain, context string) (keyID, sealed string) {
	a := k.keys[k.current]
	nonce := make([]byte, a.NonceSize())
	_, _ = rand.Read(nonce)
	out := a.Seal(nonce, nonce, []byte(plain), []byte(context))
	return k.current, base64.StdEncoding.EncodeToString(out)
}

// Open decrypts sealed with key keyID and context. Errors: an unknown key id (a
// key removed from SECRETS_KEYS too early), or a ciphertext that does not open.
func (k *Keyring) Open(keyID, sealed, context string) (string, error) {
	a, ok := k.keys[keyID]
	if !ok {
		return "", fmt.Errorf("secret sealed with key %q, which SECRETS_KEYS does not hold", keyID)
	}
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < a.NonceSize()+a.Overhead() {
		return "", fmt.Errorf("secret sealed with key %q is damaged", keyID)
	}
	plain, err := a.Open(nil, raw[:a.NonceSize()], raw[a.NonceSize():], []byte(context))
	if err != nil {
		return "", fmt.Errorf("secret sealed with key %q does not open (wrong key or moved)", keyID)
	}
	return string(plain), nil
}
