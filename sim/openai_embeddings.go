package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"

	"github.com/groundhog-ai/groundhog"
)

// DefaultEmbeddingDims is the length of an embedding when the request sets no
// "dimensions".
const DefaultEmbeddingDims = 8

const maxEmbeddingDims = 4096

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *count          `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

// embeddingInput is one input: a text or a token array.
type embeddingInput struct {
	text   string
	tokens []int
	isText bool
}

// parseEmbeddings validates an embeddings request. Each input's vector
// depends only on the model, the input and the dimensions, so the same text
// embeds the same in any batch.
func parseEmbeddings(body []byte, sd seed) (*job, error) {
	var req embeddingsRequest
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, groundhog.Errorf(groundhog.EINVALID, "you must provide a model parameter")
	}
	inputs, err := embeddingInputs(req.Input)
	if err != nil {
		return nil, err
	}
	dims := DefaultEmbeddingDims
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > maxEmbeddingDims {
			return nil, groundhog.Errorf(groundhog.EINVALID, "Invalid 'dimensions': must be between 1 and %d.", maxEmbeddingDims)
		}
		dims = int(*req.Dimensions)
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, groundhog.Errorf(groundhog.EINVALID, "Invalid 'encoding_format': %q (want float or base64).", req.EncodingFormat)
	}
	prompt := 0
	for _, in := range inputs {
		if in.isText {
			prompt += CountTokens(in.text)
		} else {
			prompt += len(in.tokens)
		}
	}
	j := &job{model: req.Model, seed: sd, prompt: prompt}
	j.respond = func(x *exchange) {
		type datum struct {
			Object    string `json:"object"`
			Index     int    `json:"index"`
			Embedding any    `json:"embedding"`
		}
		out := struct {
			Object string  `json:"object"`
			Data   []datum `json:"data"`
			Model  string  `json:"model"`
			Usage  struct {
				PromptTokens int64 `json:"prompt_tokens"`
				TotalTokens  int64 `json:"total_tokens"`
			} `json:"usage"`
		}{Object: "list", Model: req.Model}
		out.Usage.PromptTokens, out.Usage.TotalTokens = x.usage.InputTokens, x.usage.InputTokens
		for i, in := range inputs {
			vec := embed(req.Model, in, dims)
			d := datum{Object: "embedding", Index: i, Embedding: vec}
			if req.EncodingFormat == "base64" {
				buf := make([]byte, 4*len(vec))
				for k, f := range vec {
					binary.LittleEndian.PutUint32(buf[4*k:], math.Float32bits(f))
				}
				d.Embedding = base64.StdEncoding.EncodeToString(buf)
			}
			out.Data = append(out.Data, d)
		}
		x.respondJSON(out)
	}
	return j, nil
}

func embeddingInputs(raw json.RawMessage) ([]embeddingInput, error) {
	raw = bytes.TrimSpace(raw)
	invalid := groundhog.Errorf(groundhog.EINVALID, "'$.input' is invalid: want a non-empty string, an array of non-empty strings, an array of tokens, or an array of token arrays.")
	if len(raw) == 0 || string(raw) == "null" {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Missing required parameter: 'input'.")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, invalid
		}
		return []embeddingInput{{text: s, isText: true}}, nil
	}
	var strs []string
	if json.Unmarshal(raw, &strs) == nil && len(strs) > 0 {
		out := make([]embeddingInput, len(strs))
		for i, s := range strs {
			if s == "" {
				return nil, invalid
			}
			out[i] = embeddingInput{text: s, isText: true}
		}
		return out, nil
	}
	var toks []int
	if json.Unmarshal(raw, &toks) == nil && len(toks) > 0 {
		return []embeddingInput{{tokens: toks}}, nil
	}
	var arrs [][]int
	if json.Unmarshal(raw, &arrs) == nil && len(arrs) > 0 {
		out := make([]embeddingInput, len(arrs))
		for i, a := range arrs {
			if len(a) == 0 {
				return nil, invalid
			}
			out[i] = embeddingInput{tokens: a}
		}
		return out, nil
	}
	return nil, invalid
}

// embed returns a deterministic unit vector for in.
func embed(model string, in embeddingInput, dims int) []float32 {
	h := sha256.New()
	h.Write([]byte(model))
	h.Write([]byte{0})
	if in.isText {
		h.Write([]byte("text\x00" + in.text))
	} else {
		h.Write([]byte("tokens\x00"))
		var b [8]byte
		for _, t := range in.tokens {
			binary.LittleEndian.PutUint64(b[:], uint64(t))
			h.Write(b[:])
		}
	}
	var sd [32]byte
	h.Sum(sd[:0])
	rng := rand.New(rand.NewChaCha8(sd))
	vec := make([]float32, dims)
	var norm float64
	for i := range vec {
		f := rng.Float64()*2 - 1
		vec[i] = float32(f)
		norm += f * f
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		norm = 1
	}
	for i := range vec {
		vec[i] = float32(float64(vec[i]) / norm)
	}
	return vec
}
