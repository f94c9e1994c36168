//go:build race

package gateway_test

// raceEnabled: under the race detector sync.Pool drops a quarter of what is
// put back, so tests of buffer reuse cannot measure it.
const raceEnabled = true
