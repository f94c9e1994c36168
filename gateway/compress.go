package gateway

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/groundhog-ai/groundhog"
)

// Compression, both ways, for the routes groundhog reads and writes itself
// (the model routes and /groundhog/…; passthrough routes relay bytes as the
// provider sent them):
//
//   - A request body with Content-Encoding: gzip is decompressed as it is
//     read, and the body limit applies to the decompressed size: a small
//     gzip bomb is a 413 after max_body_bytes, never an allocation of what
//     it expands to. Other encodings are a 415.
//   - A JSON response of at least minGzipBytes is gzip-compressed when the
//     client accepts gzip (SDKs send Accept-Encoding: gzip). Event streams
//     are never compressed: each event must reach the client when written.

// minGzipBytes is the smallest JSON body worth compressing: below about one
// packet, gzip costs more CPU than the bytes it saves.
const minGzipBytes = 1400

var gzipWriters = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed); return w }}

// ownsBody reports whether the gateway itself reads the body of path (as
// opposed to relaying it on a passthrough route).
func ownsBody(path string) bool {
	switch path {
	case "/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/messages":
		return true
	}
	return !strings.HasPrefix(path, "/v1/")
}

// compression wraps next with request decompression and response
// compression for the routes the gateway owns.
//
// This frame stays under a call for as long as it runs, a follower's wait
// included (see deliver): the work before and after next is done in
// functions of its own.
func (s *Server) compression(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if !ownsBody(r.URL.Path) {
		next.ServeHTTP(w, r)
		return
	}
	if enc := hget(r.Header, "Content-Encoding"); enc != "" {
		zr, ok := s.decompressRequest(w, r, enc)
		if !ok {
			return
		}
		if zr != nil {
			defer zr.Close()
		}
	}
	if !acceptsGzip(hvalues(r.Header, "Accept-Encoding")) {
		next.ServeHTTP(w, r)
		return
	}
	gw := s.newGzipResponse(w)
	defer gw.recycle()
	next.ServeHTTP(gw, r)
}

// decompressRequest makes r's body read through gzip when its
// Content-Encoding (enc) says so, returning the reader to close after the
// handler (nil for identity). Any other encoding, or a body that is not
// gzip, is answered with an error and false.
func (s *Server) decompressRequest(w http.ResponseWriter, r *http.Request, enc string) (*gzip.Reader, bool) {
	enc = strings.TrimSpace(strings.ToLower(enc))
	if enc == "" || enc == "identity" {
		return nil, true
	}
	if enc != "gzip" {
		s.encodingError(w, r, groundhog.Errorf(groundhog.EMEDIATYPE, "Content-Encoding %q is not supported (use gzip or none)", enc))
		return nil, false
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		s.encodingError(w, r, groundhog.Errorf(groundhog.EINVALID, "request body is not valid gzip"))
		return nil, false
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{zr, r.Body}
	r.ContentLength = -1
	r.Header.Del("Content-Encoding")
	r.Header.Del("Content-Length")
	return zr, true
}

// newGzipResponse wraps w in a pooled gzipResponse; recycle returns it.
func (s *Server) newGzipResponse(w http.ResponseWriter) *gzipResponse {
	gw := gzipResponses.Get().(*gzipResponse)
	*gw = gzipResponse{ResponseWriter: w, memo: s.gzipMemo}
	return gw
}

// recycle finishes the response and puts the wrapper back in the pool,
// holding nothing of it.
func (g *gzipResponse) recycle() {
	g.close()
	*g = gzipResponse{}
	gzipResponses.Put(g)
}

// gzipResponses are the wrappers of the responses that may be compressed:
// one a request otherwise, on every hit of a client that accepts gzip.
// None is used after its handler returns (net/http forbids writing to a
// response then).
var gzipResponses = sync.Pool{New: func() any { return new(gzipResponse) }}

// mcpPrefix is where the MCP gateway is mounted (mcp.PathPrefix): its
// clients read JSON-RPC errors.
const mcpPrefix = "/mcp/"

// encodingError answers a request whose Content-Encoding cannot be read,
// in the error shape of its route: a JSON-RPC error on the MCP endpoints,
// else the provider's.
func (s *Server) encodingError(w http.ResponseWriter, r *http.Request, err error) {
	if !strings.HasPrefix(r.URL.Path, mcpPrefix) {
		s.writeError(w, r, shapeOfPath(r.URL.Path), err)
		return
	}
	msg, _ := json.Marshal(groundhog.ErrorMessage(err))
	body := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":` + string(msg) + `}}`
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(statusFor(groundhog.ErrorCode(err)))
	_, _ = io.WriteString(w, body)
}

func shapeOfPath(p string) groundhog.Shape {
	if p == "/v1/messages" {
		return groundhog.ShapeMessages
	}
	if strings.HasPrefix(p, "/model/") || strings.HasPrefix(p, "/guardrail/") || strings.HasPrefix(p, "/async-invoke") {
		return groundhog.ShapeConverse // Bedrock's exceptions on every Bedrock route
	}
	return groundhog.ShapeChat
}

// acceptsGzip reports whether Accept-Encoding values name gzip (or *) with a
// non-zero quality.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for rest := v; rest != ""; {
			var part string
			part, rest, _ = strings.Cut(rest, ",")
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "*" {
				continue
			}
			q := 1.0
			if k, val, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
				if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					q = f
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}

// gzipResponse compresses the response when its head says it is JSON of a
// worthwhile size; otherwise it writes through untouched.
//
// A head that announces the body's length (every stored answer's does)
// waits for the body: when it comes in one write of that length, it is
// compressed in one piece — through the memo, so an answer sent again is
// not compressed again — and sent with the compressed length. Any other
// write, a flush or the end of the handler sends the waiting head and
// compresses the body as it comes, as a head without a length does.
type gzipResponse struct {
	http.ResponseWriter
	memo    *gzipMemo
	decided bool
	zw      *gzip.Writer
	whole   int // the announced length of a body the head waits for; 0 when none waits
	status  int // the waiting head's status
}

func (g *gzipResponse) WriteHeader(status int) {
	if !g.decided && status >= 200 {
		g.decided = true
		h := g.Header()
		n, err := strconv.Atoi(hget(h, "Content-Length"))
		big := err != nil || n >= minGzipBytes
		// The size is checked first: a small stored answer (most hits)
		// skips parsing its media type.
		if big && jsonMediaType(hget(h, "Content-Type")) && hget(h, "Content-Encoding") == "" && status != http.StatusNoContent && status != http.StatusNotModified {
			h.Del("Content-Length")
			h.Set("Content-Encoding", "gzip")
			h.Add("Vary", "Accept-Encoding")
			if err == nil && g.memo != nil {
				g.whole, g.status = n, status
				return
			}
			g.zw = gzipWriters.Get().(*gzip.Writer)
			g.zw.Reset(g.ResponseWriter)
		}
	}
	g.ResponseWriter.WriteHeader(status)
}

// release sends the head that waits for its body, and compresses the body
// as it comes.
func (g *gzipResponse) release() {
	g.whole = 0
	g.zw = gzipWriters.Get().(*gzip.Writer)
	g.zw.Reset(g.ResponseWriter)
	g.ResponseWriter.WriteHeader(g.status)
}

func (g *gzipResponse) Write(p []byte) (int, error) {
	if !g.decided {
		g.WriteHeader(http.StatusOK)
	}
	if g.whole > 0 {
		if len(p) == g.whole {
			return g.writeWhole(p)
		}
		g.release()
	}
	if g.zw != nil {
		return g.zw.Write(p)
	}
	return g.ResponseWriter.Write(p)
}

// writeWhole sends the waiting head with the compressed length, and p,
// the whole body, compressed.
func (g *gzipResponse) writeWhole(p []byte) (int, error) {
	g.whole = 0
	gz, buf := g.memo.compress(p)
	g.Header().Set("Content-Length", strconv.Itoa(len(gz)))
	g.ResponseWriter.WriteHeader(g.status)
	_, err := g.ResponseWriter.Write(gz)
	if buf != nil {
		putGzipBuf(buf)
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush flushes compressed bytes too, so http.ResponseController works.
func (g *gzipResponse) Flush() {
	if g.whole > 0 {
		g.release()
	}
	if g.zw != nil {
		_ = g.zw.Flush()
	}
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (g *gzipResponse) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func (g *gzipResponse) close() {
	if g.whole > 0 {
		g.release() // the head still waits: the handler wrote no body
	}
	if g.zw != nil {
		_ = g.zw.Close()
		g.zw.Reset(io.Discard)
		gzipWriters.Put(g.zw)
		g.zw = nil
	}
}

// jsonMediaType reports whether ct is application/json, with or without
// parameters: the exact common forms without mime.ParseMediaType's
// allocations, anything else through it.
func jsonMediaType(ct string) bool {
	switch ct {
	case "application/json", "application/json; charset=utf-8":
		return true
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "application/json"
}
