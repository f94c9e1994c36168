package storetest

import (
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// RunCache runs the cache part of the conformance suite against a backend
// that implements only groundhog.CacheStore (such as Redis). open is called
// once per subtest and must return an empty store of its own.
func RunCache(t *testing.T, open func(t *testing.T) groundhog.CacheStore) {
	for _, st := range cacheTests {
		t.Run(st.name, func(t *testing.T) {
			st.fn(t, cacheOnly{CacheStore: open(t)})
		})
	}
}

// cacheOnly gives a CacheStore the Stores method set; the cache tests call
// only the cache methods, so the nil interfaces are never used.
type cacheOnly struct {
	groundhog.CacheStore
	groundhog.LedgerStore
	groundhog.OperationStore
	groundhog.KeyStore
}
