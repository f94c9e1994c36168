package ledger

import (
	"strings"
	"testing"
)

// refSum over decodeHash is ref, for hashes of the gateway's form and for
// every kind of string that is not.
func TestRefSumIsRef(t *testing.T) {
	good := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	hashes := []string{good, strings.Replace(good, "a", "A", 1), strings.Replace(good, "f", "g", 1),
		good[:len(good)-1], good + "0", "md5:" + good[7:], "", "x"}
	a, b := newReqMap[int](), newReqMap[int]()
	for i, h := range hashes {
		for _, tenant := range []string{"acme", "", "other"} {
			d := decodeHash(h)
			if d.ok != (i == 0) {
				t.Errorf("decodeHash(%q).ok = %v", h, d.ok)
			}
			if r1, r2 := a.ref(tenant, h), b.refSum(tenant, h, &d); r1 != r2 {
				t.Errorf("%q %q: ref %+v, refSum %+v", tenant, h, r1, r2)
			}
		}
	}
}
