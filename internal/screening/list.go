package screening

import (
	"bufio"

	"context"
	_ "embed"
	"fmt"
	"github.com/google/uuid"
	"io"
	"strings"
	"time"

	"partnerd/internal/chain"
	"partnerd/internal/lifecycle"
)

// ImportedList is one imported address list (partnerd screening import).
type ImportedList struct {
	ID         uuid.UUID
	Source     string
	Published  time.Time
	Size       int
	ImportedAt time.Time
	// Active: screened against (the latest import of its source).
	Active bool
}

// Listing is one imported list naming an address: the evidence of a list hit.
type Listing = lifecycle.Listing

// ListLookup reads the imported lists (the store): which active lists name an
// address, by its Key.
type ListLookup interface {
	Listings(ctx context.Context, key string) ([]Listing, error)
}

// List screens against the address lists imported into the database (partnerd
// screening import), so every instance screens against the same lists.
type List struct{ lookup ListLookup }

// NewList returns the list screener over lookup.
func NewList(lookup ListLookup) *List { return &List{lookup: lookup} }

// Kind is "list".
func (*List) Kind() string { return "list" }

// Covers every network: a list names addresses of any chain.
func (*List) Covers(string) bool { return true }

// Screen looks address up in every active list.
func (l *List) Screen(ctx context.Context, _ string, address string) (Finding, error) {
	ls, err := l.lookup.Listings(ctx, Key(address))
	if err != nil {
		return Finding{Screener: "list", Source: "imported lists"}, err
	}
	return ListFinding(ls), nil
}

// ListFinding is the finding of a lookup that returned ls (a hit when any list
// names the address; the first names source and version).
func ListFinding(ls []Listing) Finding {
	if len(ls) == 0 {
		return Finding{Screener: "list", Source: "imported lists", Hit: false}
	}
	var sources []string
	for _, x := range ls {
		sources = append(sources, x.Source)
	}
	first := ls[0]
	return Finding{Screener: "list", Source: strings.Join(sources, ", "), Hit: true,
		Version:  fmt.Sprintf("published %s, imported %s", first.Published.Format(time.DateOnly), first.ImportedAt.UTC().Format(time.RFC3339)),
		Category: "sanctions", Name: "listed address"}
}

// Key is the form lists are compared in: an EVM address in lower case (its
// checksum is letter case only), a Tron address as written (base58 is case
// sensitive).
func Key(address string) string {
	a := strings.TrimSpace(address)
	if strings.HasPrefix(a, "0x") || strings.HasPrefix(a, "0X") {
		return "0x" + strings.ToLower(a[2:])
	}
	return a
}

// Entry is one address of a list file.
type Entry struct {
	Key, Address string
}

// ParseList reads a list file: one address per line (an EVM 0x address or a Tron
// T… address); blank lines and lines starting with # are skipped. A line that is
// neither kind of address fails the whole file, naming its line.
func ParseList(r io.Reader) ([]Entry, error) {
	var out []Entry
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !validAddress(line) {
			return nil, fmt.Errorf("line %d: %q is not an EVM (0x…) or Tron (T…) address", n, truncate(line, 64))
		}
		k := Key(line)
		if !seen[k] {
			seen[k] = true
			out = append(out, Entry{Key: k, Address: line})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func validAddress(a string) bool {
	if strings.HasPrefix(a, "0x") || strings.HasPrefix(a, "0X") {
		_, err := chain.ParseAddress(chain.BEP20, "0x"+a[2:])
		return err == nil && len(a) == 42
	}
	_, err := chain.ParseAddress(chain.TRC20, a)
	return err == nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Sample is the list staging screens against until one is imported: a few
// addresses of the OFAC SDN list (sample.txt names its source).
//
//go:embed sample.txt
var Sample string

// SampleSource and SamplePublished name the embedded sample as an import would.
const (
	SampleSource    = "OFAC SDN sample (staging)"
	SamplePublished = "2026-11-01"
)
