//go:build race

package fingerprint

// raceOn: the race detector is on (the exhaustive UTF-8 test then samples
// its three-byte sequences: it checks assembly, where the detector adds
// nothing, and would run for more than ten minutes).
const raceOn = true
