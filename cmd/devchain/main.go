// Command devchain runs a real EVM chain on this machine for trying deposits end to
// end: go-ethereum's simulated backend with JSON-RPC on a loopback port, the test
// USDT token (testdata/usdt) deployed, a block mined every second. It answers the
// way the network's real node does: as BNB Smart Chain behind a provider (bep20),
// or as java-tron's /jsonrpc (trc20: stateRoot "0x", BlockId hashes, "finalized" =
// the solidified block 19 behind, java-tron's caps and error texts).
//
//	bin/devchain [--port 8545] [--network bep20|trc20] [--decimals N] [--block-time 1s] [--env-file FILE]
//	bin/devchain send --to ADDR --amount 25 [--rpc URL] [--network bep20|trc20] [--decimals N]
//
// The first prints the settings to start partnerd with (and writes them to FILE:
// `make devchain` starts partnerd from that file, so the settings have one
// source). The second transfers test USDT from the funded development account to
// ADDR (a 0x address, or a Tron T… address with --network trc20) and waits for the
// block holding it. DEVCHAIN_PORT moves both off 8545.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"

	"partnerd"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "devchain:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "send" {
		return send(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("devchain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", defaultPort(), "JSON-RPC port on 127.0.0.1 (default $DEVCHAIN_PORT, else 8545)")
	network := fs.String("network", chain.BEP20, "network whose settings to print: bep20 or trc20")
	decimals := fs.Int("decimals", 0, "token decimals (default 18 for bep20, 6 for trc20)")
	blockTime := fs.Duration("block-time", time.Second, "time between blocks")
	envFile := fs.String("env-file", "", "also write the settings to start partnerd with to this file, one NAME=VALUE a line (make devchain reads it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *network != chain.BEP20 && *network != chain.TRC20 {
		return fmt.Errorf("--network %q: want bep20 or trc20", *network)
	}
	dec := defaultDecimals(*network, *decimals)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dialect := devnet.BSC
	if *network == chain.TRC20 {
		dialect = devnet.JavaTron
	}
	ch, err := devnet.StartDialect(*port, dialect)
	if err != nil {
		return err
	}
	defer ch.Close()
	token, err := ch.Deploy(ctx, uint8(dec))
	if err != nil {
		return fmt.Errorf("deploy the token: %w", err)
	}
	id, err := ch.ChainID(ctx)
	if err != nil {
		return err
	}
	set := settings(*network, ch.URL, id, chain.FormatAddress(*network, token), dec)
	fmt.Fprintf(stdout, "devchain: JSON-RPC at %s (answering as %s), test USDT (%d decimals) at %s, a block every %s.\n\n",
		ch.URL, dialect, dec, chain.FormatAddress(*network, token), blockTime.String())
	if *envFile != "" {
		if err := writeEnv(*envFile, set); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "The settings partnerd runs with are in %s:\n\n", *envFile)
		for _, kv := range set {
			fmt.Fprintf(stdout, "  %s=%s\n", kv[0], kv[1])
		}
		fmt.Fprintln(stdout)
	} else {
		fmt.Fprintf(stdout, "Start partnerd with:\n\n  %s \\\n  make run\n\n%s", shell(set), push(*network, ch))
	}
	sender := "go run ./cmd/devchain" // run from the source tree
	if *envFile != "" {
		sender = "bin/devchain" // make devchain built it
	}
	fmt.Fprintf(stdout, `Send test USDT to a deposit address:

  %s send --network %s --to <deposit_address> --amount 25

The chain lives in memory: restarting devchain starts a new one (use a fresh
database, or partnerd treats the new chain as a reorganisation and rescans).
`, sender, *network)
	ch.Mine(ctx, *blockTime)
	return nil
}

// settings are what partnerd needs to watch this chain, in order: the one source of
// both the printout and the --env-file that make devchain starts partnerd with.
func settings(network, url, chainID, token string, decimals int) [][2]string {
	up := strings.ToUpper(network)
	return [][2]string{
		{"CHAIN_RPC_" + up, url},
		{"CHAIN_ID_" + up, chainID},
		{"TOKEN_CONTRACTS", fmt.Sprintf("usdt:%s=%s/%d", network, token, decimals)},
		{"CONFIRMATIONS", network + "=3"},
		{"CHAIN_POLL_INTERVAL", "1s"},
	}
}

// shell spells settings as a shell command's prefix, two to a line.
func shell(set [][2]string) string {
	var b strings.Builder
	for i, kv := range set {
		switch {
		case i == 0:
		case i%2 == 0:
			b.WriteString(" \\\n  ")
		default:
			b.WriteString(" ")
		}
		b.WriteString(kv[0] + "=" + kv[1])
	}
	return b.String()
}

// writeEnv writes settings to path, one NAME=VALUE a line, atomically (a reader
// waiting for the file never sees half of it).
func writeEnv(path string, set [][2]string) error {
	var b strings.Builder
	for _, kv := range set {
		b.WriteString(kv[0] + "=" + kv[1] + "\n")
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// defaultPort is DEVCHAIN_PORT when set, else 8545: the chain's port and the one
// send reaches, so both agree when the default port is taken.
func defaultPort() int {
	if p, err := strconv.Atoi(os.Getenv("DEVCHAIN_PORT")); err == nil && p > 0 {
		return p
	}
	return 8545
}

// push is the hint for a second provider that pushes new heads: the node's own
// WebSocket (geth's answers, as a BNB Smart Chain provider's wss:// endpoint gives;
// java-tron serves no WebSocket JSON-RPC).
func push(network string, ch *devnet.Chain) string {
	if network == chain.TRC20 {
		return ""
	}
	return fmt.Sprintf(`With new heads pushed (a second provider, the node's WebSocket: the watcher
wakes on each block instead of waiting for its poll):

  CHAIN_RPC_%s=%s,%s

`, strings.ToUpper(network), ch.URL, ch.WSURL)
}

func defaultDecimals(network string, decimals int) int {
	switch {
	case decimals > 0:
		return decimals
	case network == chain.TRC20:
		return 6
	default:
		return 18
	}
}

// send transfers test USDT through the JSON-RPC of a running devchain.
func send(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("devchain send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rpc := fs.String("rpc", fmt.Sprintf("http://127.0.0.1:%d", defaultPort()), "the devchain's JSON-RPC URL (default on $DEVCHAIN_PORT, else 8545)")
	network := fs.String("network", chain.BEP20, "bep20 or trc20 (the form of --to)")
	to := fs.String("to", "", "recipient address (required)")
	amount := fs.String("amount", "", "whole tokens, e.g. 25 or 10.5 (required)")
	decimals := fs.Int("decimals", 0, "token decimals (default 18 for bep20, 6 for trc20)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" || *amount == "" {
		return errors.New("send: --to and --amount are required")
	}
	recipient, err := chain.ParseAddress(*network, *to)
	if err != nil {
		return err
	}
	raw, err := devnet.Units(*amount, defaultDecimals(*network, *decimals))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := ethclient.DialContext(ctx, *rpc)
	if err != nil {
		return err
	}
	defer cl.Close()
	key, err := crypto.HexToECDSA(devnet.DevKey)
	if err != nil {
		return err
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	// The token is the development account's first contract: its address follows.
	token := crypto.CreateAddress(from, 0)
	parsed, err := abi.JSON(bytes.NewReader(partnerd.TestUSDTABI))
	if err != nil {
		return err
	}
	data, err := parsed.Pack("transfer", recipient, raw)
	if err != nil {
		return err
	}
	nonce, err := cl.PendingNonceAt(ctx, from)
	if err != nil {
		return fmt.Errorf("cannot reach a devchain at %s (--rpc, or DEVCHAIN_PORT for the port; is make devchain running?): %w", *rpc, err)
	}
	// eth_gasPrice, not the head's base fee: a java-tron-shaped block does not
	// decode as an Ethereum header.
	price, err := cl.SuggestGasPrice(ctx)
	if err != nil {
		return err
	}
	tip := big.NewInt(params.GWei)
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{
		ChainID: big.NewInt(1337), Nonce: nonce, GasTipCap: tip,
		GasFeeCap: new(big.Int).Add(new(big.Int).Mul(price, big.NewInt(2)), tip),
		Gas:       200_000, To: &token, Data: data,
	}), types.LatestSignerForChainID(big.NewInt(1337)), key)
	if err != nil {
		return err
	}
	if err := cl.SendTransaction(ctx, tx); err != nil {
		return err
	}
	for {
		rc, err := cl.TransactionReceipt(ctx, tx.Hash())
		if err == nil {
			if rc.Status != types.ReceiptStatusSuccessful {
				return fmt.Errorf("transfer %s reverted", tx.Hash().Hex())
			}
			fmt.Fprintf(stdout, "sent %s test USDT to %s: tx %s in block %d\n", *amount, *to, chain.FormatHash(*network, tx.Hash()), rc.BlockNumber)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("transfer %s not mined: %w", tx.Hash().Hex(), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
