package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"partnerd/internal/audit"
	"partnerd/internal/config"
	"partnerd/internal/kit/textrule"
	"partnerd/internal/screening"
	"partnerd/internal/store"
)

// importScreeningList imports an address list file (one address per line) as
// the list of --source published on --published: every instance screens against
// it from then on, the source's earlier list is no longer screened against, and
// the senders of every transaction not yet filled are screened again.
func importScreeningList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("screening import", stderr)
	source := fs.String("source", "", "the list's source, e.g. \"OFAC SDN\" (required)")
	published := fs.String("published", "", "the date the source published this version, YYYY-MM-DD (required)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	if *source == "" || *published == "" || fs.NArg() != 1 {
		fs.Usage()
		return usageError{errors.New("screening import: --source, --published and FILE are required")}
	}
	// The source's name is shown to operators: the text rule of every request holds.
	if p := textrule.Problem(*source); p != "" || len(*source) > 200 {
		if p == "" {
			p = "must be at most 200 bytes"
		}
		return fmt.Errorf("screening import: --source %s", p)
	}
	day, err := time.Parse(time.DateOnly, *published)
	if err != nil {
		return fmt.Errorf("screening import: --published %q: want a date such as 2026-11-01", *published)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("screening import: %w", err)
	}
	defer f.Close()
	entries, err := screening.ParseList(f)
	if err != nil {
		return fmt.Errorf("screening import: %s: %w", fs.Arg(0), err)
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	ctx := context.Background()
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	l, queued, err := st.ImportScreeningList(ctx, *source, day, entries, store.Now())
	if err != nil {
		return err
	}
	if err := recordCLI(ctx, st, audit.ScreeningListImported, fmt.Sprintf("%s, published %s (%d addresses)", l.Source, *published, l.Size)); err != nil {
		return fmt.Errorf("screening import: the list is imported, but its audit row was not written: %w", err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"id": l.ID, "source": l.Source, "published": *published,
			"size": l.Size, "imported_at": l.ImportedAt, "rescreened_transactions": queued})
	}
	_, err = fmt.Fprintf(stdout, "imported %s of %q (published %s); %s screened again\n",
		count(l.Size, "address", "addresses"), l.Source, *published, count(queued, "waiting transaction is", "waiting transactions are"))
	return err
}
