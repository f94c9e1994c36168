package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// A batch's input file (inputConfig.fileName) is a JSONL of requests that
// Google reads itself: a line naming another tenant's cachedContent, file,
// tuned model or file search store would have Google use it. The bytes of
// a file reach Google through the gateway (a resumable upload's chunks),
// so the gateway reads them as they pass, line by line, without holding
// more than one line: each line that may name a resource is read as a
// request body (gemini.BodyRefs), and the names it holds are checked
// against the tenant's records every scanCheckNames names and at the end
// of each chunk. When the upload
// ends and every name was the tenant's, the file is recorded as an input
// file (ResourceKindGeminiInputFile); a batch create is refused (404
// NOT_FOUND, nothing sent) unless each input file it names is one.
//
// A file gets no such record — and cannot be a batch's input through the
// gateway — when its bytes did not all pass through one gateway in order:
// a one-request (multipart or raw) upload, a chunk out of order or
// reaching another replica, a chunk Google refused, a line longer than
// max_body_bytes that may name a resource, a line that may name one and
// is not a JSON object, files made by files:register.

// uploadScan is the state of one resumable upload's scan.
type uploadScan struct {
	mu      sync.Mutex
	tenant  string
	offset  int64  // the bytes scanned so far: the next chunk's X-Goog-Upload-Offset
	line    []byte // the line in progress, up to the bound
	over    bool   // the line in progress passed the bound
	refs    gemini.Refs
	pending int  // names in refs not yet checked
	bad     bool // the file cannot be an input file
	busy    bool // a chunk is being read
}

// maxUploadScans bounds the uploads read at once on one gateway.
const maxUploadScans = 1024

// uploadScans holds the scans of the uploads in progress on this gateway,
// by upload_id.
type uploadScans struct {
	mu sync.Mutex
	m  map[string]*uploadScan
}

func (u *uploadScans) start(id, tenant string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]*uploadScan{}
	}
	if len(u.m) >= maxUploadScans {
		return // its file will not be an input file
	}
	u.m[id] = &uploadScan{tenant: tenant}
}

func (u *uploadScans) get(id, tenant string) *uploadScan {
	u.mu.Lock()
	defer u.mu.Unlock()
	if sc := u.m[id]; sc != nil && sc.tenant == tenant {
		return sc
	}
	return nil
}

func (u *uploadScans) end(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, id)
}

// scanReader feeds what it reads to sc; the names read are checked every
// scanCheckNames names, so a chunk of any size holds few.
type scanReader struct {
	r     io.Reader
	sc    *uploadScan
	limit int64
	n     int64
	check func(*uploadScan)
}

// scanCheckNames is how many names a scan holds before it checks them.
const scanCheckNames = 1024

func (sr *scanReader) Read(p []byte) (int, error) {
	n, err := sr.r.Read(p)
	sr.n += int64(n)
	sr.sc.mu.Lock()
	sr.sc.feed(p[:n], sr.limit)
	if sr.sc.pending >= scanCheckNames {
		sr.check(sr.sc)
	}
	sr.sc.mu.Unlock()
	return n, err
}

// feed reads the complete lines of b (with the line in progress).
func (sc *uploadScan) feed(b []byte, limit int64) {
	for len(b) > 0 && !sc.bad {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if !sc.over {
			if int64(len(sc.line)+len(part)) > limit {
				sc.over, sc.line = true, nil
			} else {
				sc.line = append(sc.line, part...)
			}
		}
		if i < 0 {
			return
		}
		sc.endLine()
		b = b[i+1:]
	}
}

// endLine reads the line in progress.
func (sc *uploadScan) endLine() {
	line := bytes.TrimPrefix(bytes.TrimSpace(sc.line), []byte("\xef\xbb\xbf"))
	over := sc.over
	sc.line, sc.over = sc.line[:0], false
	if over {
		sc.bad = true // it may name anything
		return
	}
	if len(line) == 0 || !mayNameGeminiAny(line) {
		return
	}
	refs, err := gemini.BodyRefs(line)
	if err != nil {
		sc.bad = true
		return
	}
	sc.refs.Caches = append(sc.refs.Caches, refs.Caches...)
	sc.refs.Files = append(sc.refs.Files, refs.Files...)
	sc.refs.TunedModels = append(sc.refs.TunedModels, refs.TunedModels...)
	sc.refs.FileSearchStores = append(sc.refs.FileSearchStores, refs.FileSearchStores...)
	sc.pending += len(refs.Caches) + len(refs.Files) + len(refs.TunedModels) + len(refs.FileSearchStores)
}

// check checks the names read since the last check against tenant's
// records; a name that is not the tenant's makes the file no input file.
func (s *Server) checkScan(ctx context.Context, sc *uploadScan) {
	if sc.pending == 0 || sc.bad {
		return
	}
	refs := sc.refs
	sc.refs, sc.pending = gemini.Refs{}, 0
	if err := s.checkGeminiRefs(ctx, sc.tenant, dedupeRefs(refs), true); err != nil {
		sc.bad = true
	}
}

func dedupeRefs(r gemini.Refs) gemini.Refs {
	d := func(ns []string) []string {
		seen := map[string]bool{}
		var out []string
		for _, n := range ns {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		return out
	}
	return gemini.Refs{Caches: d(r.Caches), Files: d(r.Files), TunedModels: d(r.TunedModels), FileSearchStores: d(r.FileSearchStores)}
}

// scanChunk prepares the scan of one chunk of upload id: it returns the
// scan (nil when the upload has none on this gateway, or r is a query or
// a cancel, which carry no bytes) and, when the chunk is the next in
// order, r's body wrapped to feed it (else the scan is spoilt).
func (s *Server) scanChunk(r *http.Request, id, tenant string) (*uploadScan, *scanReader) {
	cmd := strings.ToLower(r.Header.Get("X-Goog-Upload-Command"))
	if !strings.Contains(cmd, "upload") && !strings.Contains(cmd, "finalize") {
		return nil, nil // a query or a cancel: no bytes
	}
	sc := s.scans.get(id, tenant)
	if sc == nil {
		return nil, nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	off, err := strconv.ParseInt(strings.TrimSpace(r.Header.Get("X-Goog-Upload-Offset")), 10, 64)
	if sc.busy || err != nil || off != sc.offset {
		sc.bad = true
		return sc, nil
	}
	sc.busy = true
	ctx := r.Context()
	sr := &scanReader{r: r.Body, sc: sc, limit: s.cfg.MaxBodyBytes, check: func(sc *uploadScan) { s.checkScan(ctx, sc) }}
	r.Body = struct {
		io.Reader
		io.Closer
	}{sr, r.Body}
	return sc, sr
}

// endChunk ends the scan of a chunk Google answered with status: the
// lines read are checked; a chunk Google refused spoils the scan. When the
// upload is final, the file it made is recorded as an input file if every
// name it held was the tenant's.
func (s *Server) endChunk(ctx context.Context, id string, sc *uploadScan, sr *scanReader, status int, final bool, files []string) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.busy = false
	if sr != nil {
		sc.offset += sr.n
	}
	if status/100 != 2 {
		sc.bad = true
	}
	if final {
		sc.endLine()
	}
	s.checkScan(ctx, sc)
	if !final {
		return nil
	}
	s.scans.end(id)
	if sc.bad {
		return nil
	}
	return s.recordOwned(ctx, sc.tenant, ownedKind{kind: groundhog.ResourceKindGeminiInputFile}, files)
}
