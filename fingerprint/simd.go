package fingerprint

// useSIMD makes new scanners use the assembly string scan (strRun) where
// the CPU has one; tests turn it off to compare both paths.
var useSIMD = haveSIMD
