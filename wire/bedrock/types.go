package bedrock

import (
	"encoding/json"
	"errors"
	"math"

	"github.com/groundhog-ai/groundhog"
)

// The members of a request whose JSON type the gateway checks before
// anything goes upstream: a member of the wrong type is a 400
// ValidationException from the gateway, as the provider would answer it,
// instead of a provider round trip (and, on a retry loop, many). Members
// not listed here, and unknown members, pass as they are.

// converseTypes are the typed members of a Converse request.
type converseTypes struct {
	Messages []struct {
		Role    string       `json:"role"`
		Content []textMember `json:"content"`
	} `json:"messages"`
	System          []textMember `json:"system"`
	InferenceConfig *struct {
		MaxTokens     *float64 `json:"maxTokens"`
		Temperature   *float64 `json:"temperature"`
		TopP          *float64 `json:"topP"`
		StopSequences []string `json:"stopSequences"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	} `json:"toolConfig"`
	AdditionalModelResponseFieldPaths []string          `json:"additionalModelResponseFieldPaths"`
	RequestMetadata                   map[string]string `json:"requestMetadata"`
}

// textMember is a content or system block: an object whose "text", when
// present, is a string.
type textMember struct {
	Text *string `json:"text"`
}

// invokeTypes are the typed members of a native Anthropic InvokeModel
// body.
type invokeTypes struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string or an array of blocks
	} `json:"messages"`
	MaxTokens     *float64                     `json:"max_tokens"`
	Temperature   *float64                     `json:"temperature"`
	TopP          *float64                     `json:"top_p"`
	TopK          *float64                     `json:"top_k"`
	StopSequences []string                     `json:"stop_sequences"`
	Tools         []map[string]json.RawMessage `json:"tools"`
}

// checkTypes decodes body into v and returns an EINVALID error naming the
// first member of the wrong type.
func checkTypes(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.Kind().String()
		switch want {
		case "slice":
			want = "an array"
		case "map", "struct", "ptr":
			want = "an object"
		case "float64":
			want = "a number"
		case "string":
			want = "a string"
		}
		if te.Field == "" {
			return groundhog.Errorf(groundhog.EINVALID, "request body must be a JSON object")
		}
		return groundhog.Errorf(groundhog.EINVALID, "request member %s must be %s, not %s", te.Field, want, te.Value)
	}
	if err != nil {
		return groundhog.Errorf(groundhog.EINVALID, "request body must be a JSON object")
	}
	return nil
}

// checkInteger returns an EINVALID error when n is present and not a
// whole number.
func checkInteger(name string, n *float64) error {
	if n != nil && *n != math.Trunc(*n) {
		return groundhog.Errorf(groundhog.EINVALID, "request member %s must be an integer", name)
	}
	return nil
}

// checkConverseTypes checks a Converse body's members.
func checkConverseTypes(body []byte) error {
	var v converseTypes
	if err := checkTypes(body, &v); err != nil {
		return err
	}
	if v.InferenceConfig != nil {
		return checkInteger("inferenceConfig.maxTokens", v.InferenceConfig.MaxTokens)
	}
	return nil
}

// checkInvokeTypes checks a native Anthropic body's members, including that
// each message's content is a string or an array.
func checkInvokeTypes(body []byte) error {
	var v invokeTypes
	if err := checkTypes(body, &v); err != nil {
		return err
	}
	if err := checkInteger("max_tokens", v.MaxTokens); err != nil {
		return err
	}
	if err := checkInteger("top_k", v.TopK); err != nil {
		return err
	}
	for i, m := range v.Messages {
		if len(m.Content) > 0 && m.Content[0] != '"' && m.Content[0] != '[' && string(m.Content) != "null" {
			return groundhog.Errorf(groundhog.EINVALID, "request member messages[%d].content must be a string or an array", i)
		}
	}
	return nil
}
