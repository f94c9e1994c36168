//go:build race

package ledger

// raceEnabled: the race detector slows CPU-bound tests about tenfold, so
// they shrink their workloads.
const raceEnabled = true
