package ledger

// hashSum is a request hash of the gateway's form ("sha256:" and 64
// lowercase hex digits) decoded to its digest by the worker that parsed
// the line, so that the collector, which is serial, does not decode it
// again for its seen-set (reqMap.ref does the same decoding).
type hashSum struct {
	sum [32]byte
	ok  bool // hash has the gateway's form; else the map keeps the string
}

func decodeHash(hash string) (h hashSum) {
	const prefix = "sha256:"
	if len(hash) != len(prefix)+64 || hash[:len(prefix)] != prefix {
		return hashSum{}
	}
	hex := hash[len(prefix):]
	var bad byte
	for i := range 32 {
		hi, lo := unhexTable[hex[2*i]], unhexTable[hex[2*i+1]]
		bad |= hi | lo
		h.sum[i] = hi<<4 | lo&0x0f
	}
	if bad&0xf0 != 0 {
		return hashSum{}
	}
	h.ok = true
	return h
}
