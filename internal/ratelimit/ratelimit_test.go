package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseLimit(t *testing.T) {
	t.Parallel()
	valid := map[string]Limit{
		"100/1s":                  {Rate: 100, Burst: 100, Period: time.Second},
		"100/1m,burst=200":        {Rate: 100, Burst: 200, Period: time.Minute},
		" 5 / 500ms , burst = 7 ": {Rate: 5, Burst: 7, Period: 500 * time.Millisecond},
		"10/s":                    {Rate: 10, Burst: 10, Period: time.Second},
		"60/m,burst=1":            {Rate: 60, Burst: 1, Period: time.Minute},
		"1000/1h30m":              {Rate: 1000, Burst: 1000, Period: 90 * time.Minute},
	}
	for in, want := range valid {
		got, err := ParseLimit(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		back, err := ParseLimit(got.String())
		require.NoError(t, err, got.String())
		require.Equal(t, got, back, "String must round-trip through ParseLimit")
	}

	invalid := []string{
		"", "100", "/1s", "100/", "abc/1s", "1.5/1s", "100/xyz", "100/1",
		"0/1s", "-1/1s", "10/0s", "10/-1s",
		"10/1s,burst=0", "10/1s,burst=-3", "10/1s,burst=x", "10/1s,burst",
		"10/1s,foo=1", "10/1s,burst=1,burst=2", "10/1s,",
	}
	for _, in := range invalid {
		_, err := ParseLimit(in)
		require.Error(t, err, "%q must be rejected", in)
		require.Contains(t, err.Error(), "ratelimit: parse limit", in)
	}
}

func TestLimitString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "100/1s", Limit{Rate: 100, Burst: 100, Period: time.Second}.String())
	require.Equal(t, "100/1m0s,burst=200", Limit{Rate: 100, Burst: 200, Period: time.Minute}.String())
}

func TestLimitValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Limit{Rate: 1, Burst: 1, Period: time.Nanosecond}.Validate())
	require.Error(t, Limit{}.Validate())
	require.Error(t, Limit{Rate: 1, Burst: 0, Period: time.Second}.Validate())
	require.Error(t, Limit{Rate: 0, Burst: 1, Period: time.Second}.Validate())
	require.Error(t, Limit{Rate: 1, Burst: 1, Period: 0}.Validate())
}
