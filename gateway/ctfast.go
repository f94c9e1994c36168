package gateway

// knownContentTypes holds the Content-Type values upstreams send on nearly
// every answer, with isEventStream's verdict for each: a map look-up instead
// of mime.ParseMediaType's parse and parameter map (≈ 0.8 % of a 1 KB miss,
// docs/design/0010-miss-path.md). Any other value is parsed as before. Each entry is
// pinned to ParseMediaType's verdict by TestKnownContentTypesMatchParse.
var knownContentTypes = map[string]bool{
	"application/json":                 false,
	"application/json; charset=utf-8":  false,
	"application/json; charset=UTF-8":  false,
	"application/json;charset=utf-8":   false,
	"text/event-stream":                true,
	"text/event-stream; charset=utf-8": true,
	"text/event-stream;charset=UTF-8":  true,
	"text/event-stream; charset=UTF-8": true,
}
