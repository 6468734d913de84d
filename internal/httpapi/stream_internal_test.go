package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/httpkit"
)

// An export that fails before its first bytes is the handler's error (so the
// answer is an error body, not a 200); one that fails after them breaks the
// stream (the connection is cut); one that succeeds streams all it wrote.
func TestStreamBeginsOrFails(t *testing.T) {
	t.Parallel()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	down := errors.New("database out of reach")

	_, err := s.stream(ctx, func(io.Writer) error { return down })
	require.ErrorIs(t, err, down, "a failure before the first byte is the handler's")

	body, err := s.stream(ctx, func(w io.Writer) error {
		if _, err := w.Write([]byte("a,b\r\n")); err != nil {
			return err
		}
		return down
	})
	require.NoError(t, err)
	got, err := io.ReadAll(body)
	require.Equal(t, "a,b\r\n", string(got))
	require.ErrorIs(t, err, httpkit.ErrStreamBroken, "a later failure breaks the stream")
	require.ErrorIs(t, err, down)

	body, err = s.stream(ctx, func(w io.Writer) error {
		for range 3 {
			if _, err := w.Write([]byte("x\r\n")); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	got, err = io.ReadAll(body)
	require.NoError(t, err)
	require.Equal(t, "x\r\nx\r\nx\r\n", string(got))
}
