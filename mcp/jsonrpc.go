package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
)

// JSON-RPC error codes.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternal       = -32603
	// codeConflict: an idempotency key reused with other arguments.
	codeConflict = -32009
	// codeOutcomeUnknown: a side-effect call was sent and its answer lost.
	codeOutcomeUnknown = -32010
)

// message is one JSON-RPC message as a client posted it.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// isCall reports whether m is a request that expects an answer.
func (m *message) isCall() bool {
	return m.Method != "" && len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
}

func (m *message) idOrNil() json.RawMessage {
	if m == nil || len(m.ID) == 0 {
		return nil
	}
	return m.ID
}

// rpcError is a JSON-RPC error with its code.
type rpcError struct {
	code int
	msg  string
}

func (e *rpcError) Error() string { return e.msg }

func codeOf(err error) int {
	var e *rpcError
	if errors.As(err, &e) {
		return e.code
	}
	return codeInternal
}

// parseMessage decodes one JSON-RPC 2.0 message. Batches are refused: a
// tools/call inside one would escape the tool policy.
func parseMessage(body []byte) (*message, error) {
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) > 0 && t[0] == '[' {
		return nil, &rpcError{codeInvalidRequest, "JSON-RPC batches are not supported: send one message per request"}
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, &rpcError{codeParse, "malformed JSON-RPC message: " + err.Error()}
	}
	if m.JSONRPC != "2.0" {
		return &m, &rpcError{codeInvalidRequest, `not a JSON-RPC 2.0 message: "jsonrpc" must be "2.0"`}
	}
	if !validID(m.ID) {
		// Never forwarded: the server could not answer it in kind, and a
		// tools/call whose answer cannot be matched to it would look lost.
		return nil, &rpcError{codeInvalidRequest, "a JSON-RPC id must be a string, a number or null"} // answered with id null
	}
	if m.Method == "" && len(m.Result) == 0 && len(m.Error) == 0 {
		return &m, &rpcError{codeInvalidRequest, "a JSON-RPC message needs a method, a result or an error"}
	}
	return &m, nil
}

// validID reports whether id, as it was sent, is absent or a JSON string,
// number or null (JSON-RPC 2.0): not an object, an array or a boolean.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch id[0] {
	case '{', '[', 't', 'f':
		return false
	}
	return true
}

// writeError answers with a JSON-RPC error response for id (null when
// unknown).
func writeError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body := jsonOf(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// response is the JSON-RPC response to id with a stored result or error.
func response(id json.RawMessage, stored *stored) []byte {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if stored.isError {
		m["error"] = json.RawMessage(stored.body)
	} else {
		m["result"] = json.RawMessage(stored.body)
	}
	return jsonOf(m)
}
