package address

import "fmt"

// Book holds one Deriver per network, so callers ask for an address by network name.
type Book struct {
	derivers map[string]*Deriver
}

// NewBook builds a Book from network → account xpub.
func NewBook(xpubs map[string]string) (*Book, error) {
	b := &Book{derivers: make(map[string]*Deriver, len(xpubs))}
	for network, x := range xpubs {
		d, err := NewDeriver(network, x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", network, err)
		}
		b.derivers[network] = d
	}
	return b, nil
}

// Address returns the deposit address at index on network.
func (b *Book) Address(network string, index uint32) (string, error) {
	d, ok := b.derivers[network]
	if !ok {
		return "", fmt.Errorf("no xpub configured for network %q", network)
	}
	return d.Address(index)
}
