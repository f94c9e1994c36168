package sqlite

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/groundhog-ai/groundhog"
)

// eventsVersion is the first byte of an encoded event list, so the format
// can change without a migration rewriting old rows.
const eventsVersion = 1

// encodeEvents encodes evs compactly for the events BLOB column:
//
//	version byte (1), then per event: uvarint len(Name), Name, uvarint len(Data), Data
//
// The number of events is implied by the length. An empty list encodes as
// nil (NULL), so a non-streamed response stores no events at all. The
// bytes of Data are kept exactly: SSE payloads are replayed byte for byte.
func encodeEvents(evs []groundhog.Event) []byte {
	if len(evs) == 0 {
		return nil
	}
	n := 1
	for _, ev := range evs {
		n += 2*binary.MaxVarintLen64 + len(ev.Name) + len(ev.Data)
	}
	b := make([]byte, 1, n)
	b[0] = eventsVersion
	for _, ev := range evs {
		b = binary.AppendUvarint(b, uint64(len(ev.Name)))
		b = append(b, ev.Name...)
		b = binary.AppendUvarint(b, uint64(len(ev.Data)))
		b = append(b, ev.Data...)
	}
	return b
}

var errBadEvents = errors.New("sqlite: corrupt events column")

// decodeEvents reverses encodeEvents. Event.Data slices share b (which the
// caller owns), each capped so an append cannot overwrite its neighbour.
func decodeEvents(b []byte) ([]groundhog.Event, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != eventsVersion {
		return nil, fmt.Errorf("%w: version %d", errBadEvents, b[0])
	}
	var evs []groundhog.Event
	i := 1
	next := func() ([]byte, bool) {
		l, k := binary.Uvarint(b[i:])
		// Only minimal varints are accepted, so every value has exactly
		// one encoding.
		if k <= 0 || k != len(binary.AppendUvarint(nil, l)) || l > uint64(len(b)-i-k) {
			return nil, false
		}
		i += k
		s := b[i : i+int(l) : i+int(l)]
		i += int(l)
		return s, true
	}
	for i < len(b) {
		name, ok := next()
		if !ok {
			return nil, errBadEvents
		}
		data, ok := next()
		if !ok {
			return nil, errBadEvents
		}
		evs = append(evs, groundhog.Event{Name: string(name), Data: data})
	}
	return evs, nil
}

// respCols receives the columns of a stored Response (cache row or
// operation result). Every field is nullable because an operation has no
// result until it is completed or failed.
type respCols struct {
	status, streamed                   sql.NullInt64
	contentType, model                 sql.NullString
	inTok, cachedTok, writeTok, outTok sql.NullInt64
	cost                               sql.NullInt64
	body, events                       []byte
}

// dest returns the Scan destinations in the order of respColumns.
func (c *respCols) dest() []any {
	return []any{&c.status, &c.contentType, &c.streamed, &c.model,
		&c.inTok, &c.cachedTok, &c.writeTok, &c.outTok, &c.cost, &c.body, &c.events}
}

// response rebuilds the Response, nil when no response is stored (status
// NULL).
func (c *respCols) response() (*groundhog.Response, error) {
	if !c.status.Valid {
		return nil, nil
	}
	evs, err := decodeEvents(c.events)
	if err != nil {
		return nil, err
	}
	return &groundhog.Response{
		Status:      int(c.status.Int64),
		ContentType: c.contentType.String,
		Body:        c.body,
		Events:      evs,
		Streamed:    c.streamed.Int64 != 0,
		Model:       c.model.String,
		Usage: groundhog.Usage{
			InputTokens:       c.inTok.Int64,
			CachedInputTokens: c.cachedTok.Int64,
			CacheWriteTokens:  c.writeTok.Int64,
			OutputTokens:      c.outTok.Int64,
		},
		Cost: groundhog.Money(c.cost.Int64),
	}, nil
}

// respArgs returns the values of r for the columns listed by respColumns,
// all NULL when r is nil.
func respArgs(r *groundhog.Response) []any {
	if r == nil {
		return make([]any, 11)
	}
	return []any{r.Status, r.ContentType, boolInt(r.Streamed), r.Model,
		r.Usage.InputTokens, r.Usage.CachedInputTokens, r.Usage.CacheWriteTokens, r.Usage.OutputTokens,
		int64(r.Cost), r.Body, encodeEvents(r.Events)}
}
