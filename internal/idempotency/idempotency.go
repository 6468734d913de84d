// Package idempotency makes retried requests safe, after the IETF Idempotency-Key
// draft and Stripe's practice ("Implementing Stripe-like Idempotency Keys in
// Postgres"): the key's claim, the request's effects and its stored response are
// one database transaction (Service.Do), so a crash leaves either all or nothing
// and no key is ever left claimed by a dead request. A retry with the same key and
// request gets the stored response; the same key with another request is refused.
package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
)

// Retention is how long a key is remembered (the spec promises at least 24 hours).
const Retention = 24 * time.Hour

// LockTimeout is how long a committed in-progress claim may stand before a retry
// takes it over. Claims commit only with their answer now, so such a claim can
// only be one an earlier version of the service left behind.
const LockTimeout = time.Minute

// State of a key.
const (
	InProgress = "in_progress"
	Done       = "done"
)

// Key names a key: the partner, the operation and the partner's key string.
type Key struct {
	PartnerID uuid.UUID
	Operation string
	Key       string
}

// Record is a stored key.
type Record struct {
	Key
	Fingerprint    string
	State          string
	ResponseStatus int
	ResponseBody   []byte
	LockedAt       time.Time
	CreatedAt      time.Time
	ExpiresAt      time.Time
}

// Tx is the unit of work a request executes in, as this package sees it.
type Tx interface {
	// GetKey returns the key's record as this unit of work sees it, or apperr NotFound.
	GetKey(ctx context.Context, k Key) (*Record, error)
	// SaveKey stores r, a done key, unless the key is held by a record that is
	// neither expired at now nor an abandoned claim (in progress, locked before
	// staleBefore: left by an earlier version of the service); it reports whether
	// it stored r. Meeting another unit of work's uncommitted record of the key,
	// it waits for that unit to end.
	SaveKey(ctx context.Context, r *Record, now, staleBefore time.Time) (bool, error)
	// AfterCommit runs f once the unit of work has committed (never if it rolls back).
	AfterCommit(f func())
}

// Owner names whose keys a Store keeps: the partners' (Key.PartnerID is the
// partner) or the operators' (it holds the operator's id).
type Owner string

// The owners of keys.
const (
	Partners  Owner = "partners"
	Operators Owner = "operators"
)

// Keeper is a unit of work that keeps idempotency keys beside its effects: the
// store's transaction, whatever domain interface a use case sees it through.
// Run takes the use case's unit of work by this constraint, so a keyed use case
// whose unit of work keeps no keys does not compile.
type Keeper interface {
	// Keys returns owner's keys in this unit of work.
	Keys(owner Owner) Tx
}

// Store opens units of work and keeps keys.
type Store interface {
	// WithTx runs fn in a unit of work of its own: the key's look-ups and the
	// stored answers of requests that ran apart (DoApart) or failed (Do).
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// Owner is whose keys the store keeps: a use case's answer is stored among
	// them in the use case's own unit of work (Keeper.Keys).
	Owner() Owner
	// PurgeKeys deletes keys that expired before t and returns how many.
	PurgeKeys(ctx context.Context, t time.Time) (int64, error)
}

// Service runs requests under their keys.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service.
func NewService(store Store, now func() time.Time) *Service {
	return &Service{store: store, now: now}
}

// Fingerprint identifies a request: method, path and the body in canonical JSON
// (keys sorted, insignificant white space dropped), so the same request sent with
// other formatting still matches. A body that is not exactly one JSON value (data
// after the value included) is hashed as sent, so the fingerprint always covers
// every byte of the body.
func Fingerprint(method, path string, body []byte) string {
	canon := body
	if len(bytes.TrimSpace(body)) > 0 && json.Valid(body) {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			if b, err := json.Marshal(v); err == nil {
				canon = b
			}
		}
	}
	return FingerprintCanonical(method, path, canon)
}

// FingerprintCanonical is Fingerprint of a body already in canonical JSON (the
// transport's one decode, marshalled back): no second decode.
func FingerprintCanonical(method, path string, canon []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil))
}

// Response is an executed request's answer, as stored and replayed.
type Response struct {
	Status int
	Body   []byte
	// Replayed is set when the answer is the stored one of an earlier request.
	Replayed bool
}

// Stored reports whether an answer with status is kept for retries: answers of
// executed requests are (2xx, and 4xx such as 404 or 409 that report the state
// of things); a 400 (the request was malformed and did not execute) and a 5xx
// (it failed) are not, so a corrected or later retry executes afresh.
func Stored(status int) bool { return status < 500 && status != 400 }

// Do runs the request fn under key k (fingerprint fp) in one unit of work:
//
//  1. run fn, whose effects join the unit of work (Run hands it to the use case);
//  2. store fn's answer under the key beside the effects and commit both at once
//     if it is a 2xx. Any other answer rolls the effects back, and a stored 4xx
//     (see Stored) is then recorded on its own;
//  3. if the key was taken (a request with it is done), roll fn's effects back
//     and answer with the key's stored answer (Replayed) when the fingerprint is
//     the same, IdempotencyKeyReused when it is not.
//
// The key is not looked up before fn runs: a first request, by far the most
// common, pays no statement for it (the key's write, which it makes anyway, is
// the check), and a retry's effects, which are all in the unit of work, are
// rolled back unseen. A retry's effects usually fail against the first
// request's (the same merchant reference, a quote already used), and it is
// answered as the first was then too.
//
// Two requests with one key at once: the key's row is written last, so the second
// waits there for the first to commit, finds the key taken, rolls its own effects
// back and replays the first's answer (an effect that met the first's uncommitted
// rows first, such as the same merchant reference, ends the same way). No claim is
// ever committed without its answer, so a request that crashes, or whose server
// dies mid-way, leaves nothing behind: a retry executes at once.
func (s *Service) Do(ctx context.Context, k Key, fp string, fn func(ctx context.Context) (Response, error)) (Response, error) {
	return s.do(ctx, s.store.WithTx, k, fp, fn)
}

// do is Do with the unit of work opened by open, which hands its body the keys in
// that unit of work.
func (s *Service) do(ctx context.Context, open func(ctx context.Context, body func(ctx context.Context, keys Tx) error) error,
	k Key, fp string, fn func(ctx context.Context) (Response, error)) (Response, error) {
	var out Response
	err := open(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if out, err = fn(ctx); err != nil {
			return err
		}
		if out.Status < 200 || out.Status > 299 {
			return errDiscard
		}
		saved, err := s.save(ctx, tx, k, fp, out)
		if err != nil {
			return err
		}
		if !saved {
			return errTaken
		}
		return nil
	})
	switch {
	case errors.Is(err, errDiscard):
		// The effects are gone. A concurrent request may have taken the key
		// meanwhile (its effects are why these failed): answer as it did.
		if replay, lerr := s.Lookup(ctx, k, fp); lerr != nil || replay != nil {
			return derefOr(replay, out), lerr
		}
		if Stored(out.Status) {
			// Best effort: unstored, a retry executes again and, nothing having
			// changed, gets the same answer.
			_ = s.store.WithTx(ctx, func(ctx context.Context, tx Tx) error {
				_, err := s.save(ctx, tx, k, fp, out)
				return err
			})
		}
		return out, nil
	case errors.Is(err, errTaken):
		replay, err := s.Lookup(ctx, k, fp)
		if err == nil && replay == nil {
			err = errInProgress()
		}
		return derefOr(replay, out), err
	case err != nil && !errors.Is(err, uow.ErrNested):
		// A retry whose unit of work failed (its effects met the first
		// request's, say) still gets the first request's answer. (A unit of
		// work refused as nested never ran, and looking the key up would open
		// one inside the unit the caller holds.)
		if replay, lerr := s.Lookup(ctx, k, fp); lerr == nil && replay != nil {
			return *replay, nil
		}
	}
	return out, err
}

// DoApart is Do for a request whose effects cannot join the key's unit of work
// (they commit on their own, such as a job queued through another connection,
// which on SQLite would wait for the request's own write lock): the key is looked
// up first (a stored answer is replayed, another request's key refused), fn runs
// outside any unit of work, and its answer is stored afterwards under the rules
// of Do (a 2xx, or a stored 4xx). A crash between fn's effects and the stored
// answer leaves the key free, and two requests with one key at once may both run
// fn (the later one then answers as the first did): use it only where running the
// request again is harmless, such as requeueing an event for delivery.
func (s *Service) DoApart(ctx context.Context, k Key, fp string, fn func(ctx context.Context) (Response, error)) (Response, error) {
	if replay, err := s.Lookup(ctx, k, fp); err != nil || replay != nil {
		return derefOr(replay, Response{}), err
	}
	out, err := fn(ctx)
	if err != nil || !Stored(out.Status) || out.Status < 200 {
		return out, err
	}
	var saved bool
	if err := s.store.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		saved, err = s.save(ctx, tx, k, fp, out)
		return err
	}); err != nil {
		// The effects have happened: say so. Unstored, a retry runs again (harmless here).
		return out, nil
	}
	if !saved {
		// Another request with this key stored its answer meanwhile: answer as it did.
		if replay, lerr := s.Lookup(ctx, k, fp); lerr == nil && replay != nil {
			return *replay, nil
		}
	}
	return out, nil
}

var (
	// errDiscard rolls back a request's effects whose answer is not a success.
	errDiscard = errors.New("idempotency: discard effects")
	// errTaken rolls back a request whose key another request took meanwhile.
	errTaken = errors.New("idempotency: key taken")
)

func derefOr(r *Response, def Response) Response {
	if r != nil {
		return *r
	}
	return def
}

// save stores the answer r under k.
func (s *Service) save(ctx context.Context, tx Tx, k Key, fp string, r Response) (bool, error) {
	now := s.now()
	return tx.SaveKey(ctx, &Record{Key: k, Fingerprint: fp, State: Done, ResponseStatus: r.Status, ResponseBody: r.Body,
		LockedAt: now, CreatedAt: now, ExpiresAt: now.Add(Retention)}, now, now.Add(-LockTimeout))
}

// Lookup is lookup in a unit of work of its own: the answer stored for k to replay
// to a request with fingerprint fp, nil when there is none (the key is free), or
// IdempotencyKeyReused for another request's key. Do and DoApart use it after a
// request's own unit of work; a caller whose use case failed before it reached
// Run uses it, so a retry still gets its stored answer.
func (s *Service) Lookup(ctx context.Context, k Key, fp string) (*Response, error) {
	var out *Response
	err := s.store.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		out, err = s.lookup(ctx, tx, k, fp)
		return err
	})
	return out, err
}

// lookup returns the stored answer to replay for k, nil when k is free (unknown,
// expired or an abandoned claim), or an error: IdempotencyKeyReused for another
// request's key, IdempotencyRequestInProgress for a live claim of an earlier
// version of the service.
func (s *Service) lookup(ctx context.Context, tx Tx, k Key, fp string) (*Response, error) {
	old, err := tx.GetKey(ctx, k)
	if apperr.CodeOf(err) == apperr.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	if !now.Before(old.ExpiresAt) || (old.State == InProgress && now.Sub(old.LockedAt) >= LockTimeout) {
		return nil, nil
	}
	if old.Fingerprint != fp {
		return nil, apperr.Field(apperr.IdempotencyKeyReused,
			"This Idempotency-Key was already used with a different request.",
			"Idempotency-Key", "use a new key for a new request")
	}
	if old.State == Done {
		return &Response{Status: old.ResponseStatus, Body: old.ResponseBody, Replayed: true}, nil
	}
	return nil, errInProgress()
}

func errInProgress() error {
	return apperr.New(apperr.IdempotencyRequestInProgress,
		"A request with this Idempotency-Key is still being processed; retry shortly.")
}

// Purge deletes expired keys and returns how many.
func (s *Service) Purge(ctx context.Context) (int64, error) {
	return s.store.PurgeKeys(ctx, s.now())
}

// Request is a state-changing call that came with an idempotency key, as its
// caller made it: the Service keeping that caller's keys, the key and the
// request's fingerprint, and how the use case's outcome becomes the answer a
// retry gets back. Both renders are pure (no database, no I/O beyond encoding):
// they run inside the unit of work, before the commit, so the answer is stored
// with the effects. The transport builds it (the HTTP layer, from the
// Idempotency-Key header and the body it decoded once) and hands the use case
// Keyed of it; a call without a key is run with uow.Run (uow.Plain), never with
// a Request.
type Request[T any] struct {
	Service     *Service
	Key         Key
	Fingerprint string
	// Render is the answer to a success: the use case's result as status and body.
	Render func(T) (Response, error)
	// RenderError is the answer to a failure, as the transport answers it; only
	// answers that Stored keeps need a body.
	RenderError func(error) Response
}

// Keyed reports whether the call came with a key (the only calls Run, RunApart
// and Before take).
func (r Request[T]) Keyed() bool { return r.Service != nil && r.Key.Key != "" }

// errUnkeyed is what Run, RunApart and Before return for a Request without a
// key: such a call is run with uow.Run.
var errUnkeyed = errors.New("idempotency: a request without a key is run with uow.Run, not under a key")

// answer renders the outcome of the use case.
func (r Request[T]) answer(out T, failed error) (Response, error) {
	if failed != nil {
		if r.RenderError == nil {
			return Response{Status: http.StatusInternalServerError}, nil
		}
		return r.RenderError(failed), nil
	}
	if r.Render == nil {
		return Response{}, fmt.Errorf("idempotency: operation %s renders no answer for its stored key", r.Key.Operation)
	}
	return r.Render(out)
}

// Replayed is what Run returns, as its error, instead of running the use case
// again: the answer stored for an earlier request with the same key. The
// transport sends it as it was stored.
type Replayed struct{ Response Response }

func (r *Replayed) Error() string { return "idempotency: replayed stored answer" }

// ReplayOf returns the stored answer err carries, if it is a Replayed.
func ReplayOf(err error) (Response, bool) {
	var r *Replayed
	if errors.As(err, &r) {
		return r.Response, true
	}
	return Response{}, false
}

// Run runs a keyed request's use case in one unit of work, begun once with begin
// (uow.Run): fn runs in it and the answer req renders of fn's outcome is stored
// under the key in it, and all commit together. The key's rules hold
// as Do states them: a stored answer is returned as *Replayed, fn's effects
// rolled back, another request's key is refused. The unit of work is handed to the key
// store as the typed X it is (a Keeper), never looked at at run time. A Request
// without a key is refused: a call without one uses uow.Run.
func Run[T any, X Keeper](ctx context.Context, begin uow.Begin[X], req Request[T], fn func(ctx context.Context, tx X) (T, error)) (T, error) {
	var zero T
	if !req.Keyed() {
		return zero, errUnkeyed
	}
	var out T
	var failed error
	var unit X
	owner := req.Service.store.Owner()
	open := func(ctx context.Context, body func(ctx context.Context, keys Tx) error) error {
		return uow.Do(ctx, begin, func(ctx context.Context, tx X) error {
			unit = tx
			return body(ctx, tx.Keys(owner))
		})
	}
	resp, err := req.Service.do(ctx, open, req.Key, req.Fingerprint, func(ctx context.Context) (Response, error) {
		out, failed = fn(ctx, unit)
		return req.answer(out, failed)
	})
	return outcome(resp, err, out, failed)
}

// RunApart is Run for a use case whose effects cannot join a unit of work opened
// for them (they commit on their own, such as a job queued through the queue's own
// connection): under a keyed Request, the key's rules hold as DoApart states them.
// Use it only where running the use case twice is harmless.
func RunApart[T any](ctx context.Context, req Request[T], fn func(ctx context.Context) (T, error)) (T, error) {
	if !req.Keyed() {
		var zero T
		return zero, errUnkeyed
	}
	var out T
	var failed error
	resp, err := req.Service.DoApart(ctx, req.Key, req.Fingerprint, func(ctx context.Context) (Response, error) {
		out, failed = fn(ctx)
		return req.answer(out, failed)
	})
	return outcome(resp, err, out, failed)
}

// Before is what a use case returns when it fails before its unit of work (while
// pricing against a rates source that is down, say): a retry of a request that
// once succeeded still gets its stored answer (as *Replayed), and another
// request's key is still refused; otherwise err.
func Before[T any](ctx context.Context, req Request[T], err error) error {
	if !req.Keyed() {
		return errors.Join(errUnkeyed, err)
	}
	stored, lerr := req.Service.Lookup(ctx, req.Key, req.Fingerprint)
	switch {
	case stored != nil:
		return &Replayed{Response: *stored}
	case apperr.CodeOf(lerr) == apperr.IdempotencyKeyReused:
		return lerr
	}
	return err
}

// outcome is what Run returns: the stored answer of another request as
// *Replayed, the unit of work's own failure, fn's error, or fn's result.
func outcome[T any](resp Response, err error, out T, failed error) (T, error) {
	var zero T
	switch {
	case err != nil:
		return zero, err
	case resp.Replayed:
		return zero, &Replayed{Response: resp}
	case failed != nil:
		return zero, failed
	}
	return out, nil
}

// Keyed returns the uow.Runner of req, a keyed request, for the use case it is
// made to: Run, RunApart and Before under req's key.
func Keyed[X Keeper, T any](req Request[T]) uow.Runner[T, X] { return keyed[T, X]{req} }

type keyed[T any, X Keeper] struct{ req Request[T] }

func (k keyed[T, X]) Run(ctx context.Context, begin uow.Begin[X], fn func(ctx context.Context, tx X) (T, error)) (T, error) {
	return Run(ctx, begin, k.req, fn)
}

func (k keyed[T, X]) Apart(ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	return RunApart(ctx, k.req, fn)
}

func (k keyed[T, X]) Before(ctx context.Context, err error) error { return Before(ctx, k.req, err) }
