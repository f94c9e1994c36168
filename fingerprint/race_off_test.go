//go:build !race

package fingerprint

const raceOn = false
