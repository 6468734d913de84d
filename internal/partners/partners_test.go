package partners

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
)

// memStore is an in-memory Store for the service's own rules.
type memStore struct {
	mu     sync.Mutex
	byHash map[string]*Partner
}

func (m *memStore) CreatePartner(_ context.Context, p *Partner) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byHash == nil {
		m.byHash = map[string]*Partner{}
	}
	m.byHash[p.KeyHash] = p
	return nil
}

// WithTx runs fn with the store itself as the unit of work.
func (m *memStore) KeysVersion(context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprint(len(m.byHash)), nil
}

func (m *memStore) WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	return fn(ctx, m)
}

func (m *memStore) PartnerByKeyHash(_ context.Context, h string) (*Partner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.byHash[h]; ok {
		return p, nil
	}
	return nil, apperr.New(apperr.NotFound, "no partner")
}

func (m *memStore) CountPartners(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.byHash)), nil
}

func (m *memStore) Partners(context.Context) ([]*Partner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Partner, 0, len(m.byHash))
	for _, p := range m.byHash {
		out = append(out, p)
	}
	return out, nil
}

func (m *memStore) PartnerByID(_ context.Context, id uuid.UUID) (*Partner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.byHash {
		if p.ID == id {
			return p, nil
		}
	}
	return nil, apperr.New(apperr.NotFound, "no partner")
}

func TestKeysAreRandomPrefixedAndHashed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		k, err := NewKey(Production)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(k, "sk_live_"))
		require.Len(t, k, len("sk_live_")+43)
		require.False(t, seen[k])
		seen[k] = true
		require.Len(t, HashKey(k), 64)
		require.NotContains(t, HashKey(k), k)
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	st := &memStore{}
	now := func() time.Time { return time.Unix(0, 0).UTC() }
	sandbox := NewService(st, Sandbox, Defaults{FeeRate: decimal.RequireFromString("0.01")}, now)
	live := NewService(st, Production, Defaults{}, now)
	ctx := context.Background()

	p, key, err := sandbox.Create(ctx, st, "  Acme  ")
	require.NoError(t, err)
	require.Equal(t, "Acme", p.Name)
	require.Equal(t, "0.01", p.FeeRate.String())
	require.NotEqual(t, key, p.KeyHash, "only the hash is kept")

	got, err := sandbox.Authenticate(ctx, key)
	require.NoError(t, err)
	require.Equal(t, p.ID, got.ID)

	// A sandbox key against production, a live key against staging, an unknown key
	// and an empty one are all the same 401.
	_, liveKey, err := live.Create(ctx, st, "Live")
	require.NoError(t, err)
	for _, tc := range []struct {
		svc *Service
		key string
	}{{live, key}, {sandbox, liveKey}, {sandbox, "sk_sandbox_unknown"}, {sandbox, ""}} {
		_, err := tc.svc.Authenticate(ctx, tc.key)
		require.Equal(t, apperr.Unauthorized, apperr.CodeOf(err))
	}

	_, _, err = sandbox.Create(ctx, st, " ")
	require.Equal(t, apperr.InvalidRequest, apperr.CodeOf(err))
}

func TestEnsureDemo(t *testing.T) {
	t.Parallel()
	svc := NewService(&memStore{}, Sandbox, Defaults{}, time.Now)
	p, key, err := svc.EnsureDemo(context.Background())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(key, "sk_sandbox_"))
	require.Equal(t, "Demo partner", p.Name)
	none, again, err := svc.EnsureDemo(context.Background())
	require.NoError(t, err)
	require.Empty(t, again, "only an empty database gets a demo partner")
	require.Nil(t, none)
}
