package postgres

import (
	"fmt"

	"github.com/groundhog-ai/groundhog"
)

// respColumnList are the columns of a stored Response, in the order of
// respCols.dest and respArgs; prefix names the operation result columns.
func respColumnList(prefix string) []string {
	cols := []string{"status", "content_type", "streamed", "model",
		"input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens",
		"cost", "body", "event_names", "event_data"}
	for i := range cols {
		cols[i] = prefix + cols[i]
	}
	return cols
}

// respNumCols is len(respColumnList(…)).
const respNumCols = 12

// respCols receives the columns of a stored Response. Every field is
// nullable because an operation has no result until it ends.
type respCols struct {
	status                             *int32
	contentType, model                 *string
	streamed                           *bool
	inTok, cachedTok, writeTok, outTok *int64
	cost                               *int64
	body                               []byte
	eventNames                         []string
	eventData                          [][]byte
}

func (c *respCols) dest() []any {
	return []any{&c.status, &c.contentType, &c.streamed, &c.model,
		&c.inTok, &c.cachedTok, &c.writeTok, &c.outTok, &c.cost, &c.body, &c.eventNames, &c.eventData}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// response rebuilds the Response, nil when none is stored (status NULL).
func (c *respCols) response() (*groundhog.Response, error) {
	if c.status == nil {
		return nil, nil
	}
	if len(c.eventNames) != len(c.eventData) {
		return nil, fmt.Errorf("postgres: corrupt events: %d names, %d payloads", len(c.eventNames), len(c.eventData))
	}
	var evs []groundhog.Event
	if len(c.eventNames) > 0 {
		evs = make([]groundhog.Event, len(c.eventNames))
		for i := range evs {
			evs[i] = groundhog.Event{Name: c.eventNames[i], Data: c.eventData[i]}
		}
	}
	return &groundhog.Response{
		Status:      int(*c.status),
		ContentType: deref(c.contentType),
		Body:        c.body,
		Events:      evs,
		Streamed:    deref(c.streamed),
		Model:       deref(c.model),
		Usage: groundhog.Usage{
			InputTokens:       deref(c.inTok),
			CachedInputTokens: deref(c.cachedTok),
			CacheWriteTokens:  deref(c.writeTok),
			OutputTokens:      deref(c.outTok),
		},
		Cost: groundhog.Money(deref(c.cost)),
	}, nil
}

// respArgs returns the values of r for respColumnList, all NULL when r is
// nil. Events become two parallel arrays, NULL when there are none.
func respArgs(r *groundhog.Response) []any {
	if r == nil {
		return make([]any, respNumCols)
	}
	var names, data any
	if len(r.Events) > 0 {
		n := make([]string, len(r.Events))
		d := make([][]byte, len(r.Events))
		for i, ev := range r.Events {
			n[i] = ev.Name
			d[i] = ev.Data
			if d[i] == nil {
				d[i] = []byte{} // an empty payload, not a NULL element
			}
		}
		names, data = n, d
	}
	return []any{int32(r.Status), r.ContentType, r.Streamed, r.Model,
		r.Usage.InputTokens, r.Usage.CachedInputTokens, r.Usage.CacheWriteTokens, r.Usage.OutputTokens,
		int64(r.Cost), r.Body, names, data}
}
