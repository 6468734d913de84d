// Package devnet runs a real EVM chain in the process: go-ethereum's simulated
// backend serving JSON-RPC over HTTP on a loopback port, with the test USDT token
// (testdata/usdt) deployed, behind a thin proxy that answers in the dialect of a
// real node (Proxy: BNB Smart Chain behind a provider, or java-tron). The chain
// tests and cmd/devchain use it; nothing in the service does.
package devnet

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/params"

	"partnerd"
)

// Chain is a running in-process chain.
type Chain struct {
	// Backend is the simulated chain: Commit mines a block, Fork reorganises.
	Backend *simulated.Backend
	// URL is its JSON-RPC endpoint in the dialect (http://127.0.0.1:PORT), the
	// Proxy's; NodeURL is the simulated node's own.
	URL     string
	NodeURL string
	// WSURL is the simulated node's own WebSocket endpoint (ws://127.0.0.1:PORT):
	// JSON-RPC and eth_subscribe("newHeads"), as a provider's wss:// endpoint serves.
	WSURL string
	Proxy *Proxy

	mu      sync.Mutex
	proxies []*Proxy
	key     *ecdsa.PrivateKey
	from    common.Address
	nonce   uint64
	abi     abi.ABI
}

// DevKey is the funded account's private key: a fixed, public development key
// (never use it on a real network).
const DevKey = "b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291"

// Start runs a chain answering as BNB Smart Chain does on 127.0.0.1:port (0: a
// free port).
func Start(port int) (*Chain, error) { return StartDialect(port, BSC) }

// StartDialect runs a chain answering in dialect d on 127.0.0.1:port (0: a free port).
func StartDialect(port int, d Dialect) (*Chain, error) {
	key, err := crypto.HexToECDSA(DevKey)
	if err != nil {
		return nil, err
	}
	parsed, err := abi.JSON(bytes.NewReader(partnerd.TestUSDTABI))
	if err != nil {
		return nil, err
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	backend, nodePort, wsPort, err := startNode(from)
	if err != nil {
		return nil, err
	}
	c := &Chain{Backend: backend, NodeURL: fmt.Sprintf("http://127.0.0.1:%d", nodePort), WSURL: fmt.Sprintf("ws://127.0.0.1:%d", wsPort),
		key: key, from: from, abi: parsed}
	if c.Proxy, err = newProxy(c, port, d); err != nil {
		_ = backend.Close()
		return nil, err
	}
	c.URL = c.Proxy.URL
	return c, nil
}

// startNode starts the simulated node on free loopback ports. A free port is
// only free until someone takes it: a parallel test may bind it between the
// check and the node's listen, which go-ethereum reports by panicking, so a
// failed start is retried on fresh ports.
func startNode(from common.Address) (backend *simulated.Backend, nodePort, wsPort int, err error) {
	funds := new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(params.Ether))
	for attempt := 1; ; attempt++ {
		var ports [3]int
		for i := range ports {
			if ports[i], err = freePort(); err != nil {
				return nil, 0, 0, err
			}
		}
		backend, err = func() (b *simulated.Backend, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("start the simulated node: %v", r)
				}
			}()
			return simulated.NewBackend(types.GenesisAlloc{from: {Balance: funds}}, func(nc *node.Config, _ *ethconfig.Config) {
				nc.HTTPHost, nc.HTTPPort = "127.0.0.1", ports[0]
				nc.HTTPModules = []string{"eth", "net", "web3"}
				nc.HTTPVirtualHosts = []string{"*"}
				nc.AuthAddr, nc.AuthPort = "127.0.0.1", ports[1]
				nc.WSHost, nc.WSPort = "127.0.0.1", ports[2]
				nc.WSModules = []string{"eth", "net", "web3"}
				nc.WSOrigins = []string{"*"}
			}), nil
		}()
		if err == nil || attempt == 5 {
			return backend, ports[0], ports[2], err
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// AddProxy puts another proxy answering in dialect d in front of the same node,
// on a free port: a second provider of the same chain, whose faults (Hang,
// RateLimit, Close, …) leave the first one's alone. Close stops it with the chain.
func (c *Chain) AddProxy(d Dialect) (*Proxy, error) {
	px, err := newProxy(c, 0, d)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.proxies = append(c.proxies, px)
	c.mu.Unlock()
	return px, nil
}

// Close stops the chain and its proxies.
func (c *Chain) Close() error {
	_ = c.Proxy.Close()
	c.mu.Lock()
	extra := c.proxies
	c.proxies = nil
	c.mu.Unlock()
	for _, px := range extra {
		select {
		case <-px.closed: // a test closed it already
		default:
			_ = px.Close()
		}
	}
	return c.Backend.Close()
}

// Deploy deploys a test token with decimals decimals and a supply of 10^12 whole
// tokens, mines the block, and returns the contract's address.
func (c *Chain) Deploy(ctx context.Context, decimals uint8) (common.Address, error) {
	supply := new(big.Int).Mul(big.NewInt(1_000_000_000_000), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil))
	args, err := c.abi.Pack("", "Tether USD (test)", "USDT", decimals, supply)
	if err != nil {
		return common.Address{}, err
	}
	code, err := hex.DecodeString(strings.TrimSpace(partnerd.TestUSDTBin))
	if err != nil {
		return common.Address{}, err
	}
	return c.DeployCode(ctx, append(code, args...))
}

// DeployCode deploys a contract from its creation bytecode (with its constructor's
// arguments appended) from the funded account, mines the block, and returns the
// contract's address: the tests of other contracts than the token (the sanctions
// oracle) deploy theirs with it.
func (c *Chain) DeployCode(ctx context.Context, code []byte) (common.Address, error) {
	rc, err := c.mined(ctx, nil, code)
	if err != nil {
		return common.Address{}, fmt.Errorf("deploy: %w", err)
	}
	return rc.ContractAddress, nil
}

// Execute sends data to contract to from the funded account (the contract's
// owner when it deployed it) and mines the block; an error when the transaction
// reverted.
func (c *Chain) Execute(ctx context.Context, to common.Address, data []byte) error {
	_, err := c.mined(ctx, &to, data)
	return err
}

// mined sends a transaction, mines its block and returns its successful receipt.
func (c *Chain) mined(ctx context.Context, to *common.Address, data []byte) (*types.Receipt, error) {
	tx, err := c.send(ctx, to, data)
	if err != nil {
		return nil, err
	}
	c.Backend.Commit()
	rc, err := c.Backend.Client().TransactionReceipt(ctx, tx.Hash())
	if err != nil {
		return nil, err
	}
	if rc.Status != types.ReceiptStatusSuccessful {
		return nil, errors.New("the transaction reverted")
	}
	return rc, nil
}

// Transfer sends raw base units of token to to. The transfer is in the next block
// mined (Commit), not yet in one.
func (c *Chain) Transfer(ctx context.Context, token, to common.Address, raw *big.Int) (common.Hash, error) {
	data, err := c.abi.Pack("transfer", to, raw)
	if err != nil {
		return common.Hash{}, err
	}
	tx, err := c.send(ctx, &token, data)
	if err != nil {
		return common.Hash{}, err
	}
	return tx.Hash(), nil
}

// Units returns amount whole tokens (a decimal string such as "25" or "0.5") in
// base units of a token with decimals decimals.
func Units(amount string, decimals int) (*big.Int, error) {
	whole, frac, _ := strings.Cut(amount, ".")
	if len(frac) > decimals {
		return nil, fmt.Errorf("%s has more than %d decimals", amount, decimals)
	}
	v, ok := new(big.Int).SetString(whole+frac+strings.Repeat("0", decimals-len(frac)), 10)
	if !ok || v.Sign() < 0 {
		return nil, fmt.Errorf("%q is not an amount", amount)
	}
	return v, nil
}

func (c *Chain) send(ctx context.Context, to *common.Address, data []byte) (*types.Transaction, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.Backend.Client()
	if c.nonce == 0 {
		n, err := cl.PendingNonceAt(ctx, c.from)
		if err != nil {
			return nil, err
		}
		c.nonce = n
	}
	head, err := cl.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, err
	}
	tip := big.NewInt(params.GWei)
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	tx := types.NewTx(&types.DynamicFeeTx{
		ChainID: big.NewInt(1337), Nonce: c.nonce, GasTipCap: tip, GasFeeCap: feeCap,
		Gas: 3_000_000, To: to, Data: data,
	})
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(big.NewInt(1337)), c.key)
	if err != nil {
		return nil, err
	}
	if err := cl.SendTransaction(ctx, signed); err != nil {
		return nil, err
	}
	c.nonce++
	return signed, nil
}

// ResetNonce makes the next send read the account's nonce from the chain (after a
// reorganisation dropped sent transactions).
func (c *Chain) ResetNonce() {
	c.mu.Lock()
	c.nonce = 0
	c.mu.Unlock()
}

// Replace reorganises the chain as a real one does: the blocks above parent are
// replaced by one empty block at the height above it (another block at that
// height, not a chain only shorter), and the transactions of the dropped blocks
// are not mined again. The node returns them to its pool in the background when
// the head moves back: Replace waits until they are there (the account's pending
// nonce is back to what it was), clears the pool, and mines the new block. It
// returns the new block's hash.
func (c *Chain) Replace(ctx context.Context, parent common.Hash) (common.Hash, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.Backend.Client()
	want, err := cl.NonceAt(ctx, c.from, nil)
	if err != nil {
		return common.Hash{}, err
	}
	if err := c.Backend.Fork(parent); err != nil {
		return common.Hash{}, err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := cl.PendingNonceAt(ctx, c.from)
		if err != nil {
			return common.Hash{}, err
		}
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			return common.Hash{}, fmt.Errorf("the dropped transactions did not return to the pool (pending nonce %d, want %d)", n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.Backend.Rollback()
	c.nonce = 0
	return c.Backend.Commit(), nil
}

// Mine mines a block every interval until ctx is done.
func (c *Chain) Mine(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Backend.Commit()
		}
	}
}

// ChainID is the chain id the chain reports in its dialect, as CHAIN_ID_<NETWORK>
// takes it: 1337 (go-ethereum's development chain) as BNB Smart Chain, or as
// java-tron does, the last 4 bytes of the genesis block's id in hex.
func (c *Chain) ChainID(ctx context.Context) (string, error) {
	if c.Proxy.dialect != JavaTron {
		return "1337", nil
	}
	id, e := c.Proxy.blockID(ctx, 0)
	if e != nil {
		return "", errors.New(e.Message)
	}
	return fmt.Sprintf("0x%x", id[28:]), nil
}

// TransferMany sends raw base units of token to each of tos (into the next block
// mined), pricing them once: the fast way to fill blocks at mainnet density.
func (c *Chain) TransferMany(ctx context.Context, token common.Address, tos []common.Address, raw *big.Int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.Backend.Client()
	if c.nonce == 0 {
		n, err := cl.PendingNonceAt(ctx, c.from)
		if err != nil {
			return err
		}
		c.nonce = n
	}
	head, err := cl.HeaderByNumber(ctx, nil)
	if err != nil {
		return err
	}
	tip := big.NewInt(params.GWei)
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	signer := types.LatestSignerForChainID(big.NewInt(1337))
	for _, to := range tos {
		data, err := c.abi.Pack("transfer", to, raw)
		if err != nil {
			return err
		}
		tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{
			ChainID: big.NewInt(1337), Nonce: c.nonce, GasTipCap: tip, GasFeeCap: feeCap,
			Gas: 200_000, To: &token, Data: data, // a transfer of the test token costs ~147,000
		}), signer, c.key)
		if err != nil {
			return err
		}
		if err := cl.SendTransaction(ctx, tx); err != nil {
			return err
		}
		c.nonce++
	}
	return nil
}

// Relay is a provider in front of a JSON-RPC endpoint that fails the ways a
// Proxy cannot: Kill closes its listener (connections refused, as a provider that
// is down), and Freeze stops its head at a block, answering as a node left behind
// does: eth_blockNumber is that block, blocks above it do not exist, and
// eth_getLogs covers only the blocks up to it (an empty list above it).
type Relay struct {
	// URL is the relay's endpoint.
	URL    string
	srv    *http.Server
	ln     net.Listener
	target string
	frozen atomic.Uint64
	once   sync.Once
}

// NewRelay starts a relay to target on a free loopback port.
func NewRelay(target string) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{URL: "http://" + ln.Addr().String(), ln: ln, target: target}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Kill stops the relay: every later call is refused. Safe to call twice.
func (r *Relay) Kill() {
	r.once.Do(func() { _ = r.srv.Close() })
}

// Freeze stops the relay's head at block head (0: follow the node again).
func (r *Relay) Freeze(head uint64) { r.frozen.Store(head) }

func (r *Relay) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	var call rpcRequest
	_ = json.Unmarshal(body, &call)
	if head := r.frozen.Load(); head > 0 {
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+idOr(call.ID)+`,"result":`+result+`}`)
		}
		switch call.Method {
		case "eth_blockNumber":
			reply(strconv.Quote(hexutil.EncodeUint64(head)))
			return
		case "eth_getBlockByNumber":
			var tag string
			if len(call.Params) > 0 {
				_ = json.Unmarshal(call.Params[0], &tag)
			}
			if n, err := hexutil.DecodeUint64(tag); tag == "latest" || err == nil && n > head {
				reply("null")
				return
			}
		case "eth_getLogs":
			var filter map[string]any
			if len(call.Params) > 0 {
				_ = json.Unmarshal(call.Params[0], &filter)
			}
			to, _ := filter["toBlock"].(string)
			from, _ := filter["fromBlock"].(string)
			if n, err := hexutil.DecodeUint64(to); err == nil && n > head {
				if f, err := hexutil.DecodeUint64(from); err == nil && f > head {
					reply("[]")
					return
				}
				filter["toBlock"] = hexutil.EncodeUint64(head)
				p, _ := json.Marshal(filter)
				body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": call.ID, "method": call.Method, "params": []json.RawMessage{p}})
			}
		}
	}
	relayTo(w, req.Context(), r.target, body)
}
