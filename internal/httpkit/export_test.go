package httpkit

import "sync/atomic"

// CountDecodes makes every decode of a request body count in n until the returned
// function restores the decoder, and reports reads of a validated body's text in
// rereads.
func CountDecodes(n *atomic.Int64) (rereads *atomic.Int64, restore func()) {
	orig := decodeJSON
	decodeJSON = func(body []byte) (any, bool, error) {
		n.Add(1)
		return orig(body)
	}
	bodyRereads.Store(0)
	return &bodyRereads, func() { decodeJSON = orig }
}
