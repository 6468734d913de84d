package csvexport_test

import (
	"bytes"
	"encoding/csv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/csvexport"
)

// The file is RFC 4180 (CRLF, quoting only where needed), formulas in text are
// neutralised, amounts and times are written exactly, and a standard reader gets
// back every value.
func TestWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w, err := csvexport.New(&buf, "ref", "amount", "at", "note")
	require.NoError(t, err)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.FixedZone("WAT", 3600))
	note := "a, \"quoted\"\nline"
	require.NoError(t, w.Row(csvexport.Text("=SUM(A1:A9)"), csvexport.Amount("154225.00"), csvexport.Time(at), csvexport.OptText(&note)))
	require.NoError(t, w.Row(csvexport.Text("ORDER-1"), csvexport.Amount("0.000001"), csvexport.OptTime(nil), csvexport.OptText(nil)))
	require.NoError(t, w.Close())

	want := "ref,amount,at,note\r\n" +
		"'=SUM(A1:A9),154225.00,2026-11-23T09:00:00Z,\"a, \"\"quoted\"\"\r\nline\"\r\n" + // a line break in a field is CRLF too
		"ORDER-1,0.000001,,\r\n"
	require.Equal(t, want, buf.String())

	recs, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{
		{"ref", "amount", "at", "note"},
		{"'=SUM(A1:A9)", "154225.00", "2026-11-23T09:00:00Z", note},
		{"ORDER-1", "0.000001", "", ""},
	}, recs)
}

// Every character a spreadsheet takes as the start of a formula is neutralised;
// others, including a minus inside the text, are not.
func TestText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"=1+1": "'=1+1", "+234": "'+234", "-5": "'-5", "@cmd": "'@cmd", "\tx": "'\tx", "\rx": "'\rx",
		"": "", "ORDER-10": "ORDER-10", "a=b": "a=b", "'x": "'x",
	} {
		require.Equal(t, csvexport.Cell(want), csvexport.Text(in), "%q", in)
	}
}

// The window defaults to all time until now, and the file name says it.
func TestWindowAndDisposition(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
	f, to := csvexport.Window(nil, nil, now)
	require.Equal(t, time.Unix(0, 0).UTC(), f)
	require.Equal(t, now, to)
	from := time.Date(2026, 11, 1, 1, 0, 0, 0, time.FixedZone("WAT", 3600))
	f, _ = csvexport.Window(&from, nil, now)
	require.Equal(t, "2026-11-01T00:00:00Z", f.Format(time.RFC3339))
	require.Equal(t, `attachment; filename="payouts_20261101T000000Z_20261130T235959Z.csv"`, csvexport.Disposition("payouts", f, to))
}
