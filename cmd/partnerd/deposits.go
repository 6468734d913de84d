package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// listDeposits prints the chain transfers to deposit addresses, newest first: with
// --unmatched only those kept for operators (a second transfer, or one to the
// address of a finished transaction), which no transaction absorbed.
func listDeposits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("deposits list", stderr)
	unmatched := fs.Bool("unmatched", false, "only unmatched deposits")
	asJSON := fs.Bool("json", false, "print JSON lines, one deposit per line")
	limit := fs.Int("limit", 1000, "at most this many")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	ctx := context.Background()
	st, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	rows, err := st.ChainTransfers(ctx, *unmatched, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			tid := ""
			if r.TransactionID != nil {
				tid = r.TransactionID.String()
			}
			if err := enc.Encode(depositLine{
				Network: r.Network, Token: r.Token, TxHash: r.TxHash, LogIndex: r.LogIndex, Block: r.Block,
				BlockTime: r.BlockTime, From: r.From, To: r.To, Amount: r.Amount.StringFixed(6), RawAmount: r.Raw.String(),
				TransactionID: tid, DepositID: r.DepositID, State: r.State, Note: r.Note, SeenAt: r.CreatedAt,
			}); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SEEN\tNETWORK\tSTATE\tAMOUNT\tTO\tTX HASH\tLOG\tTRANSACTION\tNOTE")
	for _, r := range rows {
		tid := "-"
		if r.TransactionID != nil {
			tid = r.TransactionID.String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s %s\t%s\t%s\t%d\t%s\t%s\n", r.CreatedAt.Format(time.RFC3339), r.Network, r.State,
			r.Amount.StringFixed(6), r.Token, r.To, r.TxHash, r.LogIndex, tid, r.Note)
	}
	return w.Flush()
}

type depositLine struct {
	Network       string    `json:"network"`
	Token         string    `json:"token"`
	TxHash        string    `json:"tx_hash"`
	LogIndex      uint      `json:"log_index"`
	Block         uint64    `json:"block"`
	BlockTime     time.Time `json:"block_time"`
	From          string    `json:"from"`
	To            string    `json:"to"`
	Amount        string    `json:"amount"`
	RawAmount     string    `json:"raw_amount"`
	TransactionID string    `json:"transaction_id"`
	DepositID     string    `json:"deposit_id"`
	State         string    `json:"state"`
	Note          string    `json:"note"`
	SeenAt        time.Time `json:"seen_at"`
}
