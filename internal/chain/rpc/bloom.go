package rpc

import "golang.org/x/crypto/sha3"

// bloomBytes is the size of a block's logsBloom: 2,048 bits.
const bloomBytes = 256

// MayHold reports whether the block may hold a log naming every one of values
// (a contract's 20 bytes, a topic's 32): false only when the block's logsBloom
// says it holds none; true when the bloom says it may, or when the block has no
// bloom to ask (see Block.Bloom). A log's address and each of its topics are in
// its block's bloom: three bits each, at the first three 11-bit indexes of the
// value's keccak256 (the yellow paper's M3:2048), so a block without the
// value lacks at least one of its bits, while a block with it has them all.
func (b *Block) MayHold(values ...[]byte) bool {
	if len(b.Bloom) != bloomBytes {
		return true
	}
	for _, v := range values {
		h := sha3.NewLegacyKeccak256()
		h.Write(v)
		sum := h.Sum(nil)
		for i := 0; i < 6; i += 2 {
			bit := (uint(sum[i])<<8 | uint(sum[i+1])) & 2047
			if b.Bloom[bloomBytes-1-bit/8]&(1<<(bit%8)) == 0 {
				return false
			}
		}
	}
	return true
}
