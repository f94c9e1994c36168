package wire_test

import (
	"slices"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
)

func TestStores(t *testing.T) {
	for _, c := range []struct {
		shape groundhog.Shape
		body  string
		want  bool
	}{
		{groundhog.ShapeResponses, `{"model":"m","input":"hi"}`, true},
		{groundhog.ShapeResponses, `{"model":"m","store":false}`, false},
		{groundhog.ShapeResponses, `{"model":"m","store":null}`, true},
		{groundhog.ShapeResponses, `{"model":"m","metadata":{"store":"false"}}`, true},
		{groundhog.ShapeChat, `{"model":"m","messages":[]}`, false},
		{groundhog.ShapeChat, `{"model":"m","store":true}`, true},
		{groundhog.ShapeChat, `{"model":"m","\u0073tore":true}`, true},
		{groundhog.ShapeChat, `not json`, false},
	} {
		if got := wire.Stores(c.shape, []byte(c.body)); got != c.want {
			t.Errorf("Stores(%s, %s) = %v, want %v", c.shape, c.body, got, c.want)
		}
	}
}

func TestStreamObjectID(t *testing.T) {
	for _, c := range []struct {
		shape groundhog.Shape
		data  string
		want  string
	}{
		{groundhog.ShapeResponses, `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress"}}`, "resp_1"},
		{groundhog.ShapeResponses, `{"type":"response.output_text.delta","item_id":"msg_1","delta":"hi"}`, ""},
		{groundhog.ShapeChat, `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[]}`, "chatcmpl-1"},
		{groundhog.ShapeChat, `[DONE]`, ""},
		{groundhog.ShapeMessages, `{"type":"message_start","message":{"id":"msg_1"}}`, ""},
	} {
		if got := wire.StreamObjectID(c.shape, groundhog.Event{Data: []byte(c.data)}); got != c.want {
			t.Errorf("StreamObjectID(%s, %s) = %q, want %q", c.shape, c.data, got, c.want)
		}
	}
}

func TestContainerIDsAndRefs(t *testing.T) {
	answer := `{"id":"resp_1","output":[{"type":"code_interpreter_call","container_id":"cntr_1"},{"type":"message","content":[]}]}`
	if got := wire.ContainerIDs([]byte(answer)); !slices.Equal(got, []string{"cntr_1"}) {
		t.Errorf("ContainerIDs = %q", got)
	}
	body := `{"model":"m","previous_response_id":"resp_9","metadata":{"container":"cntr_x"},
		"tools":[{"type":"code_interpreter","container":"cntr_2"},{"type":"code_interpreter","container":{"type":"auto","file_ids":["file-1"]}}]}`
	refs := wire.BodyRefs([]byte(body))
	if !slices.Equal(refs.Responses, []string{"resp_9"}) || !slices.Equal(refs.Containers, []string{"cntr_2"}) || !slices.Equal(refs.Files, []string{"file-1"}) {
		t.Errorf("BodyRefs = %+v", refs)
	}
}
