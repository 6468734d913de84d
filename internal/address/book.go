package address

import (
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
)

// lookahead is how many indexes past the last one asked for a Book derives in the
// background. Indexes are handed out in order (a counter on SQLite, blocks of a
// sequence on PostgreSQL), so the next create's address is usually ready.
const lookahead = 8

// Book holds one Deriver per network, so callers ask for an address by network name.
//
// It derives ahead: after each address it computes the next few in a goroutine of
// its own, so the elliptic-curve work (about a tenth of a create's CPU) is done
// outside the create's unit of work, which on SQLite holds the one writer.
type Book struct {
	derivers map[string]*Deriver
	ahead    map[string]*ahead
}

// ahead holds the addresses derived before they were asked for.
type ahead struct {
	mu    sync.Mutex
	ready map[uint32]string
	// next is the index after the last one asked for; running reports whether a
	// goroutine is deriving (it goes on until it has caught up with next).
	next    uint32
	running bool
}

// NewBook builds a Book from network → account xpub.
func NewBook(xpubs map[string]string) (*Book, error) {
	b := &Book{derivers: make(map[string]*Deriver, len(xpubs)), ahead: make(map[string]*ahead, len(xpubs))}
	for network, x := range xpubs {
		d, err := NewDeriver(network, x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", network, err)
		}
		b.derivers[network] = d
		b.ahead[network] = &ahead{ready: map[uint32]string{}}
	}
	return b, nil
}

// Address returns the deposit address at index on network.
func (b *Book) Address(network string, index uint32) (string, error) {
	d, ok := b.derivers[network]
	if !ok {
		return "", fmt.Errorf("no xpub configured for network %q", network)
	}
	a := b.ahead[network]
	a.mu.Lock()
	addr, ok := a.ready[index]
	delete(a.ready, index)
	a.next = index + 1
	start := !a.running
	a.running = true
	a.mu.Unlock()
	if start {
		go a.derive(d)
	}
	if ok {
		return addr, nil
	}
	return d.Address(index)
}

// derive fills a.ready with the lookahead addresses from a.next on, dropping those
// outside that window (taken by another instance, or never asked for), until a
// round ends with a.next unchanged.
func (a *ahead) derive(d *Deriver) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		from := a.next
		for i := range a.ready {
			if i < from || i >= from+lookahead {
				delete(a.ready, i)
			}
		}
		for i := from; i < from+lookahead && i < hdkeychain.HardenedKeyStart; i++ {
			if _, have := a.ready[i]; have {
				continue
			}
			a.mu.Unlock()
			addr, err := d.Address(i)
			a.mu.Lock()
			if err == nil { // else, asked for, it is derived again and its error returned then
				a.ready[i] = addr
			}
		}
		if a.next == from {
			a.running = false
			return
		}
	}
}
