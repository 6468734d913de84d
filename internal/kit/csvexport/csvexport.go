// Package csvexport writes the CSV files partners and operators download: RFC 4180
// in UTF-8 (a header row, CRLF line ends, fields quoted only when they must be),
// times in RFC 3339 UTC, amounts as the exact decimal strings of the JSON APIs,
// and text neutralised against spreadsheet formula injection. It is the one place
// those rules live; each export only names its columns and its rows.
package csvexport

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"time"
)

// Writer writes one CSV file row by row, flushing as it goes so a long export
// streams instead of building up in memory.
type Writer struct {
	w    *csv.Writer
	rows int
}

// New writes the header row to w and returns the Writer for the rest.
func New(w io.Writer, header ...string) (*Writer, error) {
	c := csv.NewWriter(w)
	c.UseCRLF = true
	out := &Writer{w: c}
	if err := c.Write(header); err != nil {
		return nil, err
	}
	return out, nil
}

// Row writes one record; its cells come from Text, Amount, Time and the like.
// Every 100 rows the buffer is flushed to the underlying writer.
func (w *Writer) Row(cells ...Cell) error {
	rec := make([]string, len(cells))
	for i, c := range cells {
		rec[i] = string(c)
	}
	if err := w.w.Write(rec); err != nil {
		return err
	}
	w.rows++
	if w.rows%100 == 0 {
		w.w.Flush()
		return w.w.Error()
	}
	return nil
}

// Flush sends what is buffered to the underlying writer (after a page of rows,
// say) and reports any write error.
func (w *Writer) Flush() error {
	w.w.Flush()
	return w.w.Error()
}

// Close flushes what is buffered and reports any write error.
func (w *Writer) Close() error {
	w.w.Flush()
	return w.w.Error()
}

// Cell is one field's text, made by the constructors below so that each kind of
// value is written by its own rule.
type Cell string

// formulaStart are the first characters that make a spreadsheet read a cell as
// a formula (OWASP's CSV injection advice).
const formulaStart = "=+-@\t\r"

// Text is free text (references, names, ids): a value a spreadsheet would run as
// a formula is prefixed with a single quote, which shows it as typed.
func Text(s string) Cell {
	if s != "" && strings.ContainsRune(formulaStart, rune(s[0])) {
		return Cell("'" + s)
	}
	return Cell(s)
}

// OptText is Text of *s, or an empty field when s is nil.
func OptText(s *string) Cell {
	if s == nil {
		return ""
	}
	return Text(*s)
}

// Amount is an exact decimal string as the JSON APIs write it (money.FormatFiat,
// money.FormatTokens): never rewritten, so a spreadsheet or a parser reads the
// same digits the API answers. It must not be free text.
func Amount(s string) Cell { return Cell(s) }

// Time is t in RFC 3339, UTC, to the second.
func Time(t time.Time) Cell { return Cell(t.UTC().Format(time.RFC3339)) }

// OptTime is Time of *t, or an empty field when t is nil.
func OptTime(t *time.Time) Cell {
	if t == nil {
		return ""
	}
	return Time(*t)
}

// Word is text fixed by the code, never by a user (an id, a status, a network):
// written as it is.
func Word(s string) Cell { return Cell(s) }

// Window is the effective period of an export: from defaults to the Unix epoch,
// to to now.
func Window(from, to *time.Time, now time.Time) (time.Time, time.Time) {
	f, t := time.Unix(0, 0).UTC(), now.UTC()
	if from != nil {
		f = from.UTC()
	}
	if to != nil {
		t = to.UTC()
	}
	return f, t
}

// Disposition is the Content-Disposition of an export named name over the
// period from–to: an attachment whose file name says what and when, e.g.
// attachment; filename="transactions_20261101T000000Z_20261130T235959Z.csv".
func Disposition(name string, from, to time.Time) string {
	const f = "20060102T150405Z"
	return fmt.Sprintf("attachment; filename=%q", name+"_"+from.UTC().Format(f)+"_"+to.UTC().Format(f)+".csv")
}
