package gateway

// MissBodiesReturned counts the pooled request buffers the miss path has
// given back (missbody.go), for the external tests.
var MissBodiesReturned = &missBodiesReturned
