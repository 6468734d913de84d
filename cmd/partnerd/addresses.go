package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"partnerd/internal/address"
	"partnerd/internal/config"
	"partnerd/internal/store"
)

// accountPaths are the BIP-44 account paths wallets export the account key of
// each network from (coin types 60 and 195); --account-path overrides them.
var accountPaths = map[string]string{"bep20": "m/44'/60'/0'", "trc20": "m/44'/195'/0'"}

// exportAddresses prints every deposit address issued on a network, by index,
// with its full derivation path, transaction, status and the amount its deposit
// received, so a treasury can sweep them with an offline signer whatever gap
// limit a wallet scans by. Each address is derived again from the configured
// account key and compared with the stored one; a mismatch (the key was changed
// since) is reported and fails the command.
func exportAddresses(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("addresses export", stderr)
	network := fs.String("network", "", "the network, bep20 or trc20 (required)")
	asJSON := fs.Bool("json", false, "print JSON lines, one address per line")
	accountPath := fs.String("account-path", "", "the account key's derivation path (default: m/44'/60'/0' for bep20, m/44'/195'/0' for trc20)")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *network == "" {
		return errors.New("addresses export: --network is required")
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	xpub, ok := cfg.XPubs[*network]
	if !ok {
		return fmt.Errorf("addresses export: no account key is configured for network %q", *network)
	}
	d, err := address.NewDeriver(*network, xpub)
	if err != nil {
		return err
	}
	base := *accountPath
	if base == "" {
		base = accountPaths[*network]
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

	enc := json.NewEncoder(stdout)
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(w, "INDEX\tPATH\tADDRESS\tTRANSACTION\tSTATUS\tRECEIVED")
	}
	mismatched := 0
	err = st.IssuedAddresses(ctx, *network, func(a store.IssuedAddress) error {
		derived, err := d.Address(a.Index)
		if err != nil {
			return err
		}
		line := addressLine{
			Network: *network, Index: a.Index, Path: fmt.Sprintf("%s/0/%d", strings.TrimSuffix(base, "/"), a.Index),
			Address: a.Address, TransactionID: a.TransactionID.String(), Status: a.Status, Token: a.Token,
			KeyMismatch: derived != a.Address,
		}
		if a.Received != nil {
			line.Received = a.Received.StringFixed(6)
		}
		if line.KeyMismatch {
			mismatched++
		}
		if *asJSON {
			return enc.Encode(line)
		}
		received := "-"
		if line.Received != "" {
			received = line.Received + " " + line.Token
		}
		note := ""
		if line.KeyMismatch {
			note = "\t(not derived from the configured key)"
		}
		_, err = fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s%s\n", line.Index, line.Path, line.Address, line.TransactionID, line.Status, received, note)
		return err
	})
	if err != nil {
		return err
	}
	if !*asJSON {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if mismatched > 0 {
		return fmt.Errorf("addresses export: %d address(es) were not derived from the configured XPUB_%s; export with the key they were issued from",
			mismatched, strings.ToUpper(*network))
	}
	return nil
}

type addressLine struct {
	Network       string `json:"network"`
	Index         uint32 `json:"index"`
	Path          string `json:"derivation_path"`
	Address       string `json:"address"`
	TransactionID string `json:"transaction_id"`
	Status        string `json:"status"`
	Token         string `json:"token"`
	// Received is the matched deposit's amount; empty when none.
	Received    string `json:"amount_received"`
	KeyMismatch bool   `json:"key_mismatch"`
}
