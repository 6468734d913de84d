package webkit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFuncs: both sites show times in UTC to the second, an absent optional value
// as empty or "—", long ids by their ends, identifiers as words.
func TestFuncs(t *testing.T) {
	t.Parallel()
	f := Funcs()
	utc := f["utc"].(func(any) string)
	at := time.Date(2026, 11, 26, 11, 30, 5, 0, time.FixedZone("WAT", 3600))
	require.Equal(t, "2026-11-26 10:30:05 UTC", utc(at))
	require.Equal(t, "2026-11-26 10:30:05 UTC", utc(&at))
	require.Equal(t, "—", utc((*time.Time)(nil)))
	deref := f["deref"].(func(any) any)
	require.Equal(t, "", deref((*string)(nil)))
	require.Equal(t, "—", deref((*int)(nil)))
	n := 3
	require.Equal(t, "3", deref(&n))
	require.Equal(t, "0x5c504e…2060", f["short"].(func(string) string)("0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060"))
	require.Equal(t, "deposit confirming", f["words"].(func(any) string)("deposit_confirming"))
}
