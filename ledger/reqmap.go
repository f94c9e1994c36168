package ledger

// reqKey is the compact form of a (tenant, request hash) pair: the tenant
// interned to a number and the SHA-256 digest as bytes. It holds no
// pointers, so a map of a million of them is never scanned by the garbage
// collector, and the hash strings of the rows it came from can be freed:
// at a million rows a day that halves BuildReport's time.
type reqKey struct {
	tenant uint32
	sum    [32]byte
}

// reqRef is the resolved key of one row for a reqMap.
type reqRef struct {
	compact bool
	k       reqKey
	slow    hashKey
}

// reqMap maps (tenant, request hash) to V. Hashes of the gateway's form,
// "sha256:" and 64 lowercase hex digits, are kept compactly; any other
// string (a foreign ledger, a test) is kept as is. Two keys are equal
// exactly when their tenant and hash strings are equal.
type reqMap[V any] struct {
	tenants map[string]uint32
	compact map[reqKey]V
	slow    map[hashKey]V
}

func newReqMap[V any]() *reqMap[V] {
	return &reqMap[V]{tenants: map[string]uint32{}, compact: map[reqKey]V{}, slow: map[hashKey]V{}}
}

func (m *reqMap[V]) ref(tenant, hash string) reqRef {
	const prefix = "sha256:"
	if len(hash) != len(prefix)+64 || hash[:len(prefix)] != prefix {
		return reqRef{slow: hashKey{tenant, hash}}
	}
	var r reqRef
	hex := hash[len(prefix):]
	var bad byte
	for i := range 32 {
		hi, lo := unhexTable[hex[2*i]], unhexTable[hex[2*i+1]]
		bad |= hi | lo
		r.k.sum[i] = hi<<4 | lo&0x0f
	}
	if bad&0xf0 != 0 {
		return reqRef{slow: hashKey{tenant, hash}}
	}
	t, ok := m.tenants[tenant]
	if !ok {
		t = uint32(len(m.tenants))
		m.tenants[tenant] = t
	}
	r.k.tenant, r.compact = t, true
	return r
}

// unhexTable maps a lowercase hex digit to its value and every other byte
// to 0xff: upper case is refused so that two different hash strings never
// share a key.
var unhexTable = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

func (m *reqMap[V]) get(r reqRef) (V, bool) {
	if r.compact {
		v, ok := m.compact[r.k]
		return v, ok
	}
	v, ok := m.slow[r.slow]
	return v, ok
}

func (m *reqMap[V]) set(r reqRef, v V) {
	if r.compact {
		m.compact[r.k] = v
	} else {
		m.slow[r.slow] = v
	}
}

// deleteFunc removes every entry whose value satisfies drop.
func (m *reqMap[V]) deleteFunc(drop func(V) bool) {
	for k, v := range m.compact {
		if drop(v) {
			delete(m.compact, k)
		}
	}
	for k, v := range m.slow {
		if drop(v) {
			delete(m.slow, k)
		}
	}
}
