package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// The OpenAI Files API, enough for SDKs and the gateway's passthrough routes:
// POST /v1/files (multipart: purpose, file), GET /v1/files, GET
// /v1/files/{id}, GET /v1/files/{id}/content and DELETE /v1/files/{id}.
// Uploads are read as a stream (a 1 GB file costs the sim a copy buffer);
// the content itself is kept only up to maxFileContent bytes, so the
// content of a larger file answers 404. Files are not billed.

// maxFileContent bounds the bytes of one uploaded file the sim keeps.
const maxFileContent = 4 << 20

// maxFileUpload bounds one upload.
const maxFileUpload = 2 << 30

type simFile struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
	SHA256    string `json:"sha256"` // the sim's own addition: lets tests check the bytes that arrived
	content   []byte
}

type fileStore struct {
	mu    sync.Mutex
	files map[string]*simFile
	n     int
}

// files serves /v1/files and /v1/files/{id}[/content].
func (s *Server) files(w http.ResponseWriter, r *http.Request, path string) {
	rest := strings.TrimPrefix(strings.TrimPrefix(path, "/v1/files"), "/")
	id, sub, _ := strings.Cut(rest, "/")
	switch {
	case id == "" && r.Method == http.MethodPost:
		s.uploadFile(w, r)
	case id == "" && r.Method == http.MethodGet:
		s.fs.mu.Lock()
		list := make([]*simFile, 0, len(s.fs.files))
		for _, f := range s.fs.files {
			list = append(list, f)
		}
		s.fs.mu.Unlock()
		sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list, "has_more": false})
	case id == "":
		w.Header().Set("Allow", "GET, POST")
		writeError(w, familyOpenAI, http.StatusMethodNotAllowed, fmt.Sprintf("Method %s not allowed for %s", r.Method, r.URL.Path))
	default:
		s.fs.mu.Lock()
		f := s.fs.files[id]
		if f != nil && r.Method == http.MethodDelete && sub == "" {
			delete(s.fs.files, id)
		}
		s.fs.mu.Unlock()
		if f == nil {
			writeError(w, familyOpenAI, http.StatusNotFound, fmt.Sprintf("No such File object: %s", id))
			return
		}
		switch {
		case sub == "" && r.Method == http.MethodGet:
			writeJSON(w, http.StatusOK, f)
		case sub == "" && r.Method == http.MethodDelete:
			writeJSON(w, http.StatusOK, map[string]any{"id": f.ID, "object": "file", "deleted": true})
		case sub == "content" && r.Method == http.MethodGet:
			if f.content == nil && f.Bytes > 0 {
				writeError(w, familyOpenAI, http.StatusNotFound, fmt.Sprintf("the sim keeps the content of files up to %d bytes", maxFileContent))
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(f.content)
		default:
			writeError(w, familyOpenAI, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		}
	}
}

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		writeError(w, familyOpenAI, http.StatusBadRequest, "Content-Type must be multipart/form-data")
		return
	}
	mr := multipart.NewReader(http.MaxBytesReader(w, r.Body, maxFileUpload), params["boundary"])
	f := &simFile{Object: "file", Status: "processed", CreatedAt: s.clock.Now().Unix()}
	sawFile := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeError(w, familyOpenAI, http.StatusBadRequest, "malformed multipart body: "+err.Error())
			return
		}
		switch part.FormName() {
		case "purpose":
			b, _ := io.ReadAll(io.LimitReader(part, 256))
			f.Purpose = string(b)
		case "file":
			sawFile = true
			f.Filename = part.FileName()
			h := sha256.New()
			keep := &limitedBuffer{max: maxFileContent}
			n, err := io.Copy(io.MultiWriter(h, keep), part)
			if err != nil {
				writeError(w, familyOpenAI, http.StatusBadRequest, "could not read the file: "+err.Error())
				return
			}
			f.Bytes, f.SHA256 = n, hex.EncodeToString(h.Sum(nil))
			if !keep.over {
				f.content = keep.b
			}
		default:
			_, _ = io.Copy(io.Discard, part)
		}
	}
	if !sawFile || f.Purpose == "" {
		writeError(w, familyOpenAI, http.StatusBadRequest, "multipart fields \"file\" and \"purpose\" are required")
		return
	}
	s.fs.mu.Lock()
	if s.fs.files == nil {
		s.fs.files = map[string]*simFile{}
	}
	s.fs.n++
	f.ID = fmt.Sprintf("file-sim%06d", s.fs.n)
	s.fs.files[f.ID] = f
	s.fs.mu.Unlock()
	writeJSON(w, http.StatusOK, f)
}

// limitedBuffer keeps what is written up to max bytes, then drops it all.
type limitedBuffer struct {
	b    []byte
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if !l.over {
		if len(l.b)+len(p) > l.max {
			l.over, l.b = true, nil
		} else {
			l.b = append(l.b, p...)
		}
	}
	return len(p), nil
}
