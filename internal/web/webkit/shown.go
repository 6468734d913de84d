package webkit

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
)

// What an action shows once (a new key, a signing secret, an invitation link)
// reaches the page its form redirects to (post/redirect/get) without being
// stored anywhere: sealed (AES-256-GCM) under a key derived from the session's
// cookie token, which the server never keeps, bound to the page's path, and
// carried in the redirect's query. The page opens it once (its nonce is
// recorded as a sent form), so a reload, a copied address or another session
// shows nothing; the browser's history holds only the sealed value, which no
// one can open once the session ends.

// Seal returns the query value carrying shown to path for ss's next request.
func (s *Site[T]) Seal(ss *Session[T], path string, shown map[string]string) string {
	plain, _ := json.Marshal(shown)
	aead := sessionCipher(ss.ID)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(path)))
}

// Open returns what Seal carried to r's path, the first time it is asked
// for; nil when r carries nothing (query shown), something sealed for another
// session or page, or something already shown.
func (s *Site[T]) Open(ctx context.Context, r *http.Request, ss *Session[T]) map[string]string {
	raw, err := base64.RawURLEncoding.DecodeString(r.URL.Query().Get("shown"))
	aead := sessionCipher(ss.ID)
	if err != nil || len(raw) < aead.NonceSize() {
		return nil
	}
	nonce := raw[:aead.NonceSize()]
	plain, err := aead.Open(nil, nonce, raw[aead.NonceSize():], []byte(r.URL.Path))
	if err != nil {
		return nil
	}
	first, err := s.forms.First(ctx, "shown:"+tokenHash(ss.ID), base64.RawURLEncoding.EncodeToString(nonce))
	if err != nil || !first {
		return nil
	}
	var shown map[string]string
	if json.Unmarshal(plain, &shown) != nil {
		return nil
	}
	return shown
}

// ShowOnce answers an action whose result is shown once: post/redirect/get to
// page (under the site's base path), carrying shown sealed for that one page
// of this session.
func (s *Site[T]) ShowOnce(w http.ResponseWriter, r *http.Request, ss *Session[T], page string, shown map[string]string) {
	path := s.cfg.Base + page
	http.Redirect(w, r, path+"?"+url.Values{"shown": {s.Seal(ss, path, shown)}}.Encode(), http.StatusSeeOther)
}

// Opened adds to data what r carries to be shown once (ShowOnce), the first
// time it is asked for.
func (s *Site[T]) Opened(r *http.Request, ss *Session[T], data map[string]any) {
	for k, v := range s.Open(r.Context(), r, ss) {
		data[k] = v
	}
}

// sessionCipher is the AEAD of a session's sealed values, keyed by its cookie
// token.
func sessionCipher(token string) cipher.AEAD {
	key := sha256.Sum256([]byte("partnerd site shown once\x00" + token))
	block, _ := aes.NewCipher(key[:])
	aead, _ := cipher.NewGCM(block)
	return aead
}
