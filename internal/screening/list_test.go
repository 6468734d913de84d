package screening_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/screening"
)

func TestParseList(t *testing.T) {
	t.Parallel()
	entries, err := screening.ParseList(strings.NewReader(screening.Sample))
	require.NoError(t, err)
	require.Len(t, entries, 11, "the sample's addresses, comments skipped")
	require.Equal(t, "0x38735f03b30fbc022ddd06abed01f0ca823c6a94", entries[7].Key, "EVM addresses compare in lower case")
	require.Equal(t, "TA3rH2A7iHnm6pKH8gr9cK1EZnShnmZdFg", entries[0].Key, "Tron addresses as written")

	_, err = screening.ParseList(strings.NewReader("0x19aa5fe80d33a56d56c78e82ea5e50e5d80b4dff\nnot an address\n"))
	require.ErrorContains(t, err, "line 2")
	_, err = screening.ParseList(strings.NewReader("TA3rH2A7iHnm6pKH8gr9cK1EZnShnmZdFh\n"))
	require.ErrorContains(t, err, "line 1", "a Tron address with a bad checksum")
	dup, err := screening.ParseList(strings.NewReader("0x19AA5fe80d33a56d56c78e82ea5e50e5d80b4dff\n0x19aa5fe80d33a56d56c78e82ea5e50e5d80b4dff\n"))
	require.NoError(t, err)
	require.Len(t, dup, 1, "one address in two letter cases is one entry")
}

func TestParseSetting(t *testing.T) {
	t.Parallel()
	kinds, off, err := screening.ParseSetting("list, api,list")
	require.NoError(t, err)
	require.False(t, off)
	require.Equal(t, []string{"list", "api"}, kinds)
	_, off, err = screening.ParseSetting("off")
	require.NoError(t, err)
	require.True(t, off)
	for _, bad := range []string{"", "list,off", "chainalysis"} {
		_, _, err := screening.ParseSetting(bad)
		require.Error(t, err, bad)
	}
}
