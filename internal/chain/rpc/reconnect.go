package rpc

// Reconnect drops a ws(s) client's connection: the next call or subscription
// dials a new one. A provider that refused a subscription for the number already
// open on the connection (KindSubscriptions) counts none on a new connection,
// while waiting on the same one never ends the refusal. Calls in flight on the
// dropped connection fail (a transport error). An http(s) client, or a closed
// one, is left as it is.
func (c *Client) Reconnect() {
	w := c.ws
	if w == nil {
		return
	}
	w.mu.Lock()
	old := w.client
	w.client = nil
	w.mu.Unlock()
	if old != nil {
		old.Close()
	}
}
