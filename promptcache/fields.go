package promptcache

// topFields is a body's top-level members in body order, for the builder's
// look-ups by name. It replaced a map[string]span built per parse: a string
// key allocated per member and the map's groups (≈ 3 % of the gateway's CPU
// per 1 KB miss, docs/design/0010-miss-path.md); a top-level object has a handful of
// members and parse looks up about fifteen names, so a backwards scan is
// cheaper than hashing. Keys are the raw bytes of the body (escapes not
// decoded), as the map's were: they live as long as Prefix.body and are
// dropped with it.
type topFields []topField

type topField struct {
	key []byte
	val span
}

// get returns the value of the member named k, the last one when k is
// repeated (what assigning each member to a map in body order left), the
// zero span when there is none.
func (f topFields) get(k string) span {
	for i := len(f) - 1; i >= 0; i-- {
		if string(f[i].key) == k {
			return f[i].val
		}
	}
	return span{}
}
