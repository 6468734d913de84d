package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice"
	"partnerd/internal/chain"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// TestChainProgress: a network's reading is stored beside its cursor, replaced
// whole by the next write and read back with its times in UTC and its providers;
// a network with a cursor and no reading, or a reading and no cursor, shows what
// it has.
func TestChainProgress(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		none, err := s.ChainProgress(ctx)
		require.NoError(t, err)
		require.Empty(t, none)

		ok, err := s.MoveChainCursor(ctx, "bep20", nil, chain.Cursor{Block: 120, Hash: common.BigToHash(common.Big1)})
		require.NoError(t, err)
		require.True(t, ok)
		got, err := s.ChainProgress(ctx)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.EqualValues(t, 120, *got["bep20"].Scanned)
		require.WithinDuration(t, store.Now(), *got["bep20"].ScannedAt, time.Minute)
		require.Nil(t, got["bep20"].Reading, "no reading stored yet")
		require.Nil(t, got["bep20"].Lag())

		lagos := time.FixedZone("WAT", 3600)
		at := store.Now().Add(-time.Minute).In(lagos)
		since := at.Add(-time.Hour)
		head, final := int64(130), int64(118)
		first := backoffice.ChainReading{Network: "bep20", Head: &head, HeadAt: &at, Finalized: &final, FinalizedAt: &since,
			Finality: chain.FinalityTag, FinalitySince: &since, UpdatedAt: at,
			Providers: []chain.ProviderState{
				{Name: "https://bsc.example", State: chain.ProviderActive, Head: 130, Push: false, Since: since},
				{Name: "wss://ws.example", State: chain.ProviderRateLimited, Head: 127, Error: "HTTP 429: slow down", Push: true, Since: at},
			}}
		require.NoError(t, s.SaveChainReading(ctx, first))
		got, err = s.ChainProgress(ctx)
		require.NoError(t, err)
		r := got["bep20"].Reading
		require.NotNil(t, r)
		require.EqualValues(t, 130, *r.Head)
		require.EqualValues(t, 118, *r.Finalized)
		require.Equal(t, at.UTC(), *r.HeadAt)
		require.Equal(t, time.UTC, r.HeadAt.Location())
		require.Equal(t, since.UTC(), *r.FinalizedAt)
		require.Equal(t, chain.FinalityTag, r.Finality)
		require.Equal(t, since.UTC(), *r.FinalitySince)
		require.Equal(t, at.UTC(), r.UpdatedAt)
		require.Equal(t, []chain.ProviderState{
			{Name: "https://bsc.example", State: chain.ProviderActive, Head: 130, Since: since.UTC()},
			{Name: "wss://ws.example", State: chain.ProviderRateLimited, Head: 127, Error: "HTTP 429: slow down", Push: true, Since: at.UTC()},
		}, r.Providers)
		require.EqualValues(t, 10, *got["bep20"].Lag())
		require.EqualValues(t, 120, *got["bep20"].Scanned, "the cursor is untouched")

		// The next write replaces the reading: a node that lost its finalized tag.
		later := at.Add(time.Second)
		head = 131
		require.NoError(t, s.SaveChainReading(ctx, backoffice.ChainReading{Network: "bep20", Head: &head, HeadAt: &later,
			Finality: chain.FinalityUnknown, FinalitySince: &later, UpdatedAt: later}))
		got, err = s.ChainProgress(ctx)
		require.NoError(t, err)
		r = got["bep20"].Reading
		require.EqualValues(t, 131, *r.Head)
		require.Nil(t, r.Finalized)
		require.Nil(t, r.FinalizedAt)
		require.Equal(t, chain.FinalityUnknown, r.Finality)
		require.Equal(t, later.UTC(), r.UpdatedAt)
		require.Empty(t, r.Providers)

		// A reading without a cursor (a first start still reading the head), and one
		// with nothing reported but the heartbeat.
		require.NoError(t, s.SaveChainReading(ctx, backoffice.ChainReading{Network: "trc20", Head: &head, HeadAt: &later, UpdatedAt: later}))
		require.NoError(t, s.SaveChainReading(ctx, backoffice.ChainReading{Network: "erc20", UpdatedAt: later}))
		got, err = s.ChainProgress(ctx)
		require.NoError(t, err)
		require.Len(t, got, 3)
		require.Nil(t, got["trc20"].Scanned)
		require.Nil(t, got["trc20"].Lag())
		require.Equal(t, "trc20", got["trc20"].Network)
		require.EqualValues(t, 131, *got["trc20"].Reading.Head)
		require.Empty(t, got["trc20"].Reading.Finality)
		require.Nil(t, got["erc20"].Reading.Head)
		require.Nil(t, got["erc20"].Reading.FinalitySince)
	})
}
