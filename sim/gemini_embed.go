package sim

import (
	"encoding/json"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Gemini embeddings: POST /v1beta/models/{model}:embedContent and
// :batchEmbedContents (the genai SDKs send the batch form even for one
// text). A request's vector depends only on the model, its text parts and
// its dimensions, so a text embeds the same alone or in a batch, and a
// task type or title does not move it. Only embedding models embed; any
// other model is Google's 404. The bill counts each content's text tokens
// at the model's input rate; the answer reports no usage, as Google's does
// not.

// geminiEmbedMaxTokens is the longest content gemini-embedding-001 takes.
const geminiEmbedMaxTokens = 2048

// geminiEmbedDims is model's default and largest output dimensionality
// (0: not an embedding model).
func geminiEmbedDims(model string) int {
	if strings.HasPrefix(gemini.BaseModel(gemini.TrimModel(model)), "gemini-embedding") {
		return 3072
	}
	return 0
}

// geminiEmbedRequest is one EmbedContentRequest.
type geminiEmbedRequest struct {
	Model   string `json:"model"`
	Content *struct {
		Parts []json.RawMessage `json:"parts"`
	} `json:"content"`
	TaskType             string `json:"taskType"`
	Title                string `json:"title"`
	OutputDimensionality *count `json:"outputDimensionality"`
}

// parseGeminiEmbed validates an embedContent or batchEmbedContents call on
// model and prepares its answer.
func parseGeminiEmbed(model, method string, body []byte, sd seed) (*job, error) {
	maxDims := geminiEmbedDims(model)
	if maxDims == 0 {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "models/%s is not found for API version %s, or is not supported for %s. Call ListModels to see the list of available models and their supported methods.", gemini.TrimModel(model), gemini.APIVersion, method)
	}
	var reqs []geminiEmbedRequest
	if method == gemini.MethodBatchEmbed {
		var batch struct {
			Requests []geminiEmbedRequest `json:"requests"`
		}
		if err := decodeBody(body, &batch); err != nil {
			return nil, err
		}
		if len(batch.Requests) == 0 {
			return nil, groundhog.Errorf(groundhog.EINVALID, "* BatchEmbedContentsRequest.requests: requests is not specified")
		}
		if len(batch.Requests) > 100 {
			return nil, groundhog.Errorf(groundhog.EINVALID, "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch")
		}
		for i, r := range batch.Requests {
			if gemini.TrimModel(r.Model) != gemini.TrimModel(model) {
				return nil, groundhog.Errorf(groundhog.EINVALID, "* BatchEmbedContentsRequest.requests[%d].model: the model of each request must be the batch's model (models/%s)", i, gemini.TrimModel(model))
			}
		}
		reqs = batch.Requests
	} else {
		var one geminiEmbedRequest
		if err := decodeBody(body, &one); err != nil {
			return nil, err
		}
		reqs = []geminiEmbedRequest{one}
	}
	texts := make([]string, len(reqs))
	dims := make([]int, len(reqs))
	prompt := 0
	for i, r := range reqs {
		if r.Content == nil || len(r.Content.Parts) == 0 {
			return nil, groundhog.Errorf(groundhog.EINVALID, "* EmbedContentRequest.content: content is not specified")
		}
		var b strings.Builder
		for k, raw := range r.Content.Parts {
			var p struct {
				Text *string `json:"text"`
			}
			if err := json.Unmarshal(raw, &p); err != nil || p.Text == nil {
				return nil, groundhog.Errorf(groundhog.EINVALID, "* EmbedContentRequest.content.parts[%d]: only text parts can be embedded", k)
			}
			if k > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(*p.Text)
		}
		texts[i] = b.String()
		n := CountTokens(texts[i])
		if n > geminiEmbedMaxTokens {
			return nil, groundhog.Errorf(groundhog.EINVALID, "* EmbedContentRequest.content: the input has %d tokens, more than the model's limit of %d", n, geminiEmbedMaxTokens)
		}
		prompt += n
		dims[i] = maxDims
		if d := r.OutputDimensionality; d != nil {
			if *d < 1 || int(*d) > maxDims {
				return nil, groundhog.Errorf(groundhog.EINVALID, "* EmbedContentRequest.output_dimensionality: must be between 1 and %d", maxDims)
			}
			dims[i] = int(*d)
		}
	}
	base := gemini.TrimModel(model)
	j := &job{model: base, seed: sd, prompt: prompt}
	j.respond = func(x *exchange) {
		type values struct {
			Values []float32 `json:"values"`
		}
		vecs := make([]values, len(texts))
		for i, t := range texts {
			vecs[i] = values{embed(base, embeddingInput{text: t, isText: true}, dims[i])}
		}
		if method == gemini.MethodBatchEmbed {
			x.respondJSON(struct {
				Embeddings []values `json:"embeddings"`
			}{vecs})
			return
		}
		x.respondJSON(struct {
			Embedding values `json:"embedding"`
		}{vecs[0]})
	}
	return j, nil
}

// isGeminiEmbed reports whether method is one of the embedding methods.
func isGeminiEmbed(method string) bool {
	return method == gemini.MethodEmbed || method == gemini.MethodBatchEmbed
}
