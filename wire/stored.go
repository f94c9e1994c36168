package wire

import (
	"bytes"
	"encoding/json"

	"github.com/groundhog-ai/groundhog"
)

// The objects an OpenAI model call makes at the provider, as the gateway
// reads them to scope each to the tenant whose call made it: a stored
// response or chat completion, and the containers a code interpreter tool
// ran in.

// Stores reports whether a chat or Responses call asks the provider to
// keep its answer: the body's top-level store member when it is a boolean,
// else the API's default (true for Responses, false for chat). A body that
// is not a JSON object keeps the default.
func Stores(shape groundhog.Shape, body []byte) bool {
	def := shape == groundhog.ShapeResponses
	var v struct {
		Store *bool `json:"store"`
	}
	if json.Unmarshal(body, &v) != nil || v.Store == nil {
		return def
	}
	return *v.Store
}

// StreamObjectID returns the id of the object a chat or Responses stream
// answers with, read from one of its events: a chat chunk's "id", the
// response's "id" in a Responses event that carries the response
// (response.created, response.in_progress, …). It returns "" for an event
// that names none.
func StreamObjectID(shape groundhog.Shape, ev groundhog.Event) string {
	switch shape {
	case groundhog.ShapeChat:
		if !bytes.Contains(ev.Data, []byte(`"id"`)) {
			return ""
		}
		return ResourceID(ev.Data)
	case groundhog.ShapeResponses:
		if !bytes.Contains(ev.Data, []byte(`"response"`)) {
			return ""
		}
		var v struct {
			Response json.RawMessage `json:"response"`
		}
		if json.Unmarshal(ev.Data, &v) != nil || len(v.Response) == 0 {
			return ""
		}
		return ResourceID(v.Response)
	}
	return ""
}

// ContainerIDs returns the string values of every member named
// container_id anywhere in a JSON answer (a Responses output item of type
// code_interpreter_call names the container it ran in), or of an event's
// data. Bytes that cannot hold one are not parsed.
func ContainerIDs(body []byte) []string {
	if !bytes.Contains(body, []byte(`"container_id"`)) {
		return nil
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, m := range v {
				if id, ok := m.(string); ok && k == "container_id" && id != "" {
					out = append(out, id)
				}
				walk(m)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
