package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/testsupport/testdb"
)

// TestMain drops the test databases. The tests marked parallel mostly wait on a
// real binary (River's rescuer, a chain scanned after a kill, the README's loop),
// so six of them run at once rather than go test's default of one per core. The
// binaries built for the run (about 100 MB each) are removed after it.
func TestMain(m *testing.M) {
	code := testdb.MainParallel(m, 6)
	for _, bin := range []string{builtBin, devchainBin} {
		if bin != "" {
			_ = os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}

func TestPartnersCreateJSON(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", db.URL)
			var out, errOut bytes.Buffer
			require.NoError(t, run([]string{"partners", "create", "--name", "Acme Pay", "--json"}, &out, &errOut))

			// Exactly the documented object, and nothing else on stdout.
			var got map[string]string
			dec := json.NewDecoder(&out)
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&got))
			require.False(t, dec.More())
			require.ElementsMatch(t, []string{"partner_id", "name", "environment", "api_key", "key_id"}, keys(got))
			require.Equal(t, "Acme Pay", got["name"])
			require.Equal(t, "sandbox", got["environment"])
			require.True(t, strings.HasPrefix(got["api_key"], "sk_sandbox_"))
			require.GreaterOrEqual(t, len(strings.TrimPrefix(got["api_key"], "sk_sandbox_")), 43, "32 bytes of entropy")
			require.Equal(t, got["partner_id"], strings.TrimSpace(got["partner_id"]))
			require.NotContains(t, errOut.String(), got["api_key"], "the key is never logged")
		})
	}
}

func TestPartnersCreateText(t *testing.T) {
	t.Setenv("DATABASE_URL", "sqlite:"+filepath.Join(t.TempDir(), "p.db"))
	var out bytes.Buffer
	require.NoError(t, run([]string{"partners", "create", "--name", "Acme"}, &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "api_key:     sk_sandbox_")

	require.Error(t, run([]string{"partners", "create"}, &out, &bytes.Buffer{}), "--name is required")
	require.Error(t, run([]string{"partners", "delete"}, &out, &bytes.Buffer{}))
	require.Error(t, run([]string{"bogus"}, &out, &bytes.Buffer{}))
}

// partners keys roll replaces a key (printing the new one once); revoke stops it;
// a revoked key cannot be rolled.
func TestPartnerKeysCommands(t *testing.T) {
	t.Setenv("DATABASE_URL", "sqlite:"+filepath.Join(t.TempDir(), "p.db"))
	var out bytes.Buffer
	require.NoError(t, run([]string{"partners", "create", "--name", "Acme", "--json"}, &out, &bytes.Buffer{}))
	var created map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &created))

	out.Reset()
	require.NoError(t, run([]string{"partners", "keys", "roll", "--partner", created["partner_id"], "--key", created["key_id"], "--overlap", "1h", "--json"}, &out, &bytes.Buffer{}))
	var rolled map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &rolled))
	require.True(t, strings.HasPrefix(rolled["api_key"], "sk_sandbox_"))
	require.NotEqual(t, created["api_key"], rolled["api_key"])

	out.Reset()
	require.NoError(t, run([]string{"partners", "keys", "revoke", "--partner", created["partner_id"], "--key", rolled["key_id"]}, &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "revoked")
	err := run([]string{"partners", "keys", "roll", "--partner", created["partner_id"], "--key", rolled["key_id"]}, &out, &bytes.Buffer{})
	require.ErrorContains(t, err, "revoked")
	require.Error(t, run([]string{"partners", "keys", "roll", "--partner", "nope", "--key", rolled["key_id"]}, &out, &bytes.Buffer{}))
}

func TestProductionRefusesToStartWithDemoSettings(t *testing.T) {
	t.Setenv("DATABASE_URL", "sqlite:"+filepath.Join(t.TempDir(), "p.db"))
	t.Setenv("APP_ENV", "production")
	err := run([]string{"serve"}, &bytes.Buffer{}, &bytes.Buffer{})
	require.ErrorContains(t, err, "RATE_FEED_URL")
}

func TestMigrateCommand(t *testing.T) {
	t.Setenv("DATABASE_URL", "sqlite:"+filepath.Join(t.TempDir(), "p.db"))
	var out bytes.Buffer
	require.NoError(t, run([]string{"migrate"}, &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "applied")
	out.Reset()
	require.NoError(t, run([]string{"migrate"}, &out, &bytes.Buffer{}))
	require.Equal(t, "applied 0 migration(s)\n", out.String())
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestListenNeedsAValidSecret(t *testing.T) {
	require.ErrorContains(t, run([]string{"listen"}, &bytes.Buffer{}, &bytes.Buffer{}), "--secret")
	require.Error(t, run([]string{"listen", "--secret", "not-a-secret"}, &bytes.Buffer{}, &bytes.Buffer{}))
}
