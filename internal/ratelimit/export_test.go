package ratelimit

// Len returns how many keys the limiter holds (tests check its bound).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lru.Len()
}
