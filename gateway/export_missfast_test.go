package gateway

// MissBodiesReturned counts the pooled request buffers the miss path has
// given back (missbody.go), for the external tests.
var MissBodiesReturned = &missBodiesReturned

// QuotesShared counts the fingerprint's quote bitmaps handed to the
// prompt-cache stage (quotes.go), for the external tests.
var QuotesShared = &quotesShared
