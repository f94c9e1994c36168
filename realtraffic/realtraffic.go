// Package realtraffic reads a folder of recorded provider traffic (real
// OpenAI and Anthropic HTTP exchanges, one folder per recording, with an
// INDEX.tsv) so that tests can replay it: the request as sent, the response
// as received, and what the recording says about both. The recorded bytes
// stay in that folder; nothing of them is part of this module.
package realtraffic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Meta is the description of one recorded exchange (its NN.meta.json).
type Meta struct {
	Method             string              `json:"method"`
	Route              string              `json:"route"`
	Query              string              `json:"query"`
	Status             int                 `json:"status"`
	ContentType        string              `json:"content_type"`
	Stream             bool                `json:"stream"`
	RequestStream      bool                `json:"request_stream"`
	Provider           string              `json:"provider"`
	RequestFile        string              `json:"request_file"`
	RequestContentType string              `json:"request_content_type"`
	RequestSynthesized bool                `json:"request_synthesized"`
	ResponseBytesExact bool                `json:"response_bytes_exact"`
	RequestModel       string              `json:"request_model"`
	ResponseModel      string              `json:"response_model"`
	RecordedUsage      json.RawMessage     `json:"recorded_usage"`
	ResponseHeaders    map[string][]string `json:"response_headers"`
}

// Interaction is one recorded exchange: ID is "source/recording/NN".
type Interaction struct {
	ID       string
	Meta     Meta
	Request  []byte // the request body (empty for a GET or DELETE)
	Response []byte // the response body as recorded
}

// Load reads every exchange INDEX.tsv in dir lists, in its order.
func Load(dir string) ([]Interaction, error) {
	f, err := os.Open(filepath.Join(dir, "INDEX.tsv"))
	if err != nil {
		return nil, fmt.Errorf("realtraffic: %w", err)
	}
	defer f.Close()
	var out []Interaction
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for first := true; sc.Scan(); first = false {
		if first {
			continue // the header
		}
		id, _, _ := strings.Cut(sc.Text(), "\t")
		if id == "" {
			continue
		}
		it, err := load(dir, id)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("realtraffic: INDEX.tsv: %w", err)
	}
	return out, nil
}

func load(dir, id string) (Interaction, error) {
	it := Interaction{ID: id}
	base := filepath.Join(dir, filepath.FromSlash(id))
	b, err := os.ReadFile(base + ".meta.json")
	if err != nil {
		return it, fmt.Errorf("realtraffic: %w", err)
	}
	if err := json.Unmarshal(b, &it.Meta); err != nil {
		return it, fmt.Errorf("realtraffic: %s.meta.json: %w", id, err)
	}
	if it.Meta.RequestFile != "" {
		if it.Request, err = os.ReadFile(filepath.Join(filepath.Dir(base), it.Meta.RequestFile)); err != nil {
			return it, fmt.Errorf("realtraffic: %w", err)
		}
	}
	if it.Response, err = os.ReadFile(base + ".resp"); err != nil {
		return it, fmt.Errorf("realtraffic: %w", err)
	}
	return it, nil
}
