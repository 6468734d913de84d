// Package uow is where a state-changing use case's unit of work begins. A change,
// its history row, its outbox event and the jobs it schedules commit together or
// not at all; the use case opens that unit itself, with Run, and hands it on as
// a parameter (never in a context), so a signature says whether a call is inside
// one. Idempotency keys are a wrapper around Run for keyed requests
// (idempotency.Run); a call without a key uses Run directly.
package uow

import (
	"context"
	"errors"
)

// Begin opens a unit of work and runs fn in it, committing when fn returns nil:
// every domain package's store has one (WithTx), typed with that package's own
// transaction interface X, so a write outside a unit of work does not compile.
type Begin[X any] func(ctx context.Context, fn func(ctx context.Context, tx X) error) error

// ErrNested is what Run returns when it is called inside another unit of work's
// body: a unit of work is opened once, by the use case, and handed on; a second
// one opened inside it would commit on its own (or silently join the first), and
// either hides from the reader what commits with what.
var ErrNested = errors.New("uow: a unit of work was begun inside another; hand the open one on instead")

// Run begins a unit of work with begin, runs fn in it and returns fn's result once
// it committed; fn's error (or a failed commit) rolls everything back and is
// returned. Called from inside fn (with the context fn was handed, or one made
// from it), it returns ErrNested and opens nothing.
func Run[T, X any](ctx context.Context, begin Begin[X], fn func(ctx context.Context, tx X) (T, error)) (T, error) {
	var zero T
	if Open(ctx) {
		return zero, ErrNested
	}
	var out T
	err := begin(context.WithValue(ctx, openKey{}, true), func(ctx context.Context, tx X) error {
		var err error
		out, err = fn(ctx, tx)
		return err
	})
	if err != nil {
		return zero, err
	}
	return out, nil
}

// Do is Run for a use case with no result.
func Do[X any](ctx context.Context, begin Begin[X], fn func(ctx context.Context, tx X) error) error {
	_, err := Run(ctx, begin, func(ctx context.Context, tx X) (struct{}, error) { return struct{}{}, fn(ctx, tx) })
	return err
}

// openKey marks a context made inside a unit of work's body. It carries a flag,
// not the unit of work: the unit travels only as a parameter.
type openKey struct{}

// Open reports whether ctx was made inside a unit of work's body (Run).
func Open(ctx context.Context) bool {
	v, _ := ctx.Value(openKey{}).(bool)
	return v
}

// Runner is how a use case's caller has it run, picked by the transport: Plain
// for a call without an idempotency key (Run itself), or the keyed request's
// (idempotency.Keyed), which keeps the key's rules around the same unit of work.
// The use case begins its unit of work through it, in its own code.
type Runner[T, X any] interface {
	// Run begins the unit of work with begin and runs fn in it (see Run).
	Run(ctx context.Context, begin Begin[X], fn func(ctx context.Context, tx X) (T, error)) (T, error)
	// Apart runs fn, whose effects commit on their own (a job queued through
	// the queue's own connection, say), where running it twice is harmless.
	Apart(ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error)
	// Before is what the use case returns when it fails with err before its
	// unit of work begins (pricing against a rates source that is down, say).
	Before(ctx context.Context, err error) error
}

// Plain returns the Runner of a call without an idempotency key: Run, fn as it
// is, and err as it is.
func Plain[T, X any]() Runner[T, X] { return plain[T, X]{} }

type plain[T, X any] struct{}

func (plain[T, X]) Run(ctx context.Context, begin Begin[X], fn func(ctx context.Context, tx X) (T, error)) (T, error) {
	return Run(ctx, begin, fn)
}

func (plain[T, X]) Apart(ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	return fn(ctx)
}

func (plain[T, X]) Before(_ context.Context, err error) error { return err }
