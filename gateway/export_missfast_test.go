package gateway

// MissBodiesReturned counts the pooled request buffers the miss path has
// given back (missbody.go), for the external tests.
var MissBodiesReturned = &missBodiesReturned

// QuotesShared counts the fingerprint's quote bitmaps handed to the
// prompt-cache stage (quotes.go), for the external tests.
var QuotesShared = &quotesShared

// Every test of the package runs with returned request buffers zeroed
// (body.go): a read after a release shows in what the test checks.
func init() { clearReturnedBodies = true }
