package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// maxCachedChildren bounds each vector's child cache. The label values are
// already bounded (tenants by the key store, operations by
// MaxObservedOperations); past this many, WithLabelValues is called per
// observation as before, so the cache can never grow without bound.
const maxCachedChildren = 4096

// labels is a label tuple of up to three values, the key of a child cache.
type labels struct{ a, b, c string }

// children caches the children of one vector by label values: a read-locked
// map look-up instead of WithLabelValues' variadic slice, label validation
// and hashing on every observation.
type children[V any] struct {
	mu sync.RWMutex
	m  map[labels]V
}

// get returns the child for k, creating it with mk (called with the label
// values of k) at most once while the cache has room.
func (c *children[V]) get(k labels, mk func(labels) V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[k]; ok {
		return v
	}
	v = mk(k)
	if len(c.m) < maxCachedChildren {
		if c.m == nil {
			c.m = make(map[labels]V)
		}
		c.m[k] = v
	}
	return v
}

// counter3 returns the child of a three-label counter vector.
func counter3(c *children[prometheus.Counter], v *prometheus.CounterVec, k labels) prometheus.Counter {
	return c.get(k, func(k labels) prometheus.Counter { return v.WithLabelValues(k.a, k.b, k.c) })
}

// counter2 returns the child of a two-label counter vector (k.c unused).
func counter2(c *children[prometheus.Counter], v *prometheus.CounterVec, k labels) prometheus.Counter {
	return c.get(k, func(k labels) prometheus.Counter { return v.WithLabelValues(k.a, k.b) })
}

// observer2 returns the child of a two-label histogram vector (k.c unused).
func observer2(c *children[prometheus.Observer], v *prometheus.HistogramVec, k labels) prometheus.Observer {
	return c.get(k, func(k labels) prometheus.Observer { return v.WithLabelValues(k.a, k.b) })
}
