package sim

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

func TestGeminiEmbed(t *testing.T) {
	s, base := startSim(t, Config{})
	const model = "gemini-embedding-001"
	type values struct {
		Values []float64 `json:"values"`
	}
	var one struct {
		Embedding values `json:"embedding"`
	}
	text := geminiWords(40, "harbor")
	body := fmt.Sprintf(`{"content":{"parts":[{"text":%q}]}}`, text)
	if st := geminiDo(t, http.MethodPost, base, "/v1beta/models/"+model+":embedContent", "k1", body, &one); st != http.StatusOK {
		t.Fatalf("embedContent: %d", st)
	}
	if len(one.Embedding.Values) != 3072 {
		t.Fatalf("default dimensionality %d, want 3072", len(one.Embedding.Values))
	}

	// The batch form: each text embeds as it does alone, whatever its task
	// type; outputDimensionality truncates.
	var batch struct {
		Embeddings []values `json:"embeddings"`
	}
	bb := fmt.Sprintf(`{"requests":[{"model":"models/%s","content":{"parts":[{"text":%q}]},"taskType":"RETRIEVAL_DOCUMENT"},{"model":"models/%s","content":{"parts":[{"text":"a second text"}]},"outputDimensionality":768}]}`, model, text, model)
	if st := geminiDo(t, http.MethodPost, base, "/v1beta/models/"+model+":batchEmbedContents", "k1", bb, &batch); st != http.StatusOK {
		t.Fatalf("batchEmbedContents: %d", st)
	}
	if len(batch.Embeddings) != 2 || len(batch.Embeddings[1].Values) != 768 {
		t.Fatalf("batch answer: %d embeddings", len(batch.Embeddings))
	}
	for i, v := range one.Embedding.Values {
		if batch.Embeddings[0].Values[i] != v {
			t.Fatalf("the same text embeds differently in a batch at %d", i)
		}
	}

	bill := s.Bill()
	p, ok := pricing.Default().Lookup(model)
	if !ok {
		t.Fatal("gemini-embedding-001 is not priced")
	}
	tokens := int64(2*CountTokens(text) + CountTokens("a second text"))
	want := p.Cost(groundhog.Usage{InputTokens: tokens})
	if bill.Calls != 2 || bill.InputTokens != tokens || bill.USD != want {
		t.Fatalf("bill: %d calls, %d tokens, %s; want 2 calls, %d tokens, %s", bill.Calls, bill.InputTokens, bill.USD, tokens, want)
	}

	for _, c := range []struct {
		name, path, body string
		status           int
	}{
		{"not an embedding model", "/v1beta/models/gemini-2.5-flash:embedContent", body, http.StatusNotFound},
		{"no content", "/v1beta/models/" + model + ":embedContent", `{}`, http.StatusBadRequest},
		{"a batch request of another model", "/v1beta/models/" + model + ":batchEmbedContents", `{"requests":[{"model":"models/other","content":{"parts":[{"text":"x"}]}}]}`, http.StatusBadRequest},
		{"an empty batch", "/v1beta/models/" + model + ":batchEmbedContents", `{"requests":[]}`, http.StatusBadRequest},
		{"too many dimensions", "/v1beta/models/" + model + ":embedContent", `{"content":{"parts":[{"text":"x"}]},"outputDimensionality":4000}`, http.StatusBadRequest},
		{"malformed", "/v1beta/models/" + model + ":embedContent", `{"content":`, http.StatusBadRequest},
	} {
		if st := geminiDo(t, http.MethodPost, base, c.path, "k1", c.body, nil); st != c.status {
			t.Errorf("%s: %d, want %d", c.name, st, c.status)
		}
	}
	if s.Bill().Calls != 2 {
		t.Fatalf("a refused call was billed")
	}
}
