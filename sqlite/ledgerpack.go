package sqlite

import (
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Why the ledger keeps each row packed in one BLOB instead of 23 columns:
// modernc opens every connection with SQLITE_OPEN_FULLMUTEX, so each
// sqlite3_bind_* and sqlite3_column_* call takes and releases the
// connection mutex, and every text bind copies its string into C memory.
// With 23 columns that was most of the cost of recording a call (about
// 10 µs of CPU per ledger row, a third of a cache hit) and of a report over
// a large ledger. Packed, an insert binds 5 values and a scan reads 1.

// Value tags of the packed format.
const (
	tagInt  = 'i' // zigzag varint
	tagText = 's' // uvarint length, bytes
	tagNull = 'n'
)

// packLedger packs every field of e, in the order of ledgerColumns, then
// the prompt-cache fields (appendPackedLedger), into a new slice.
func packLedger(e *groundhog.LedgerEntry) []byte {
	return appendPackedLedger(make([]byte, 0, packedLedgerSize(e)), e)
}

// packLedgerRow packs values, in the order of ledgerColumns, as a sequence
// of tagged values.
func packLedgerRow(args []driver.Value) ([]byte, error) {
	n := 0
	for _, a := range args {
		if s, ok := a.(string); ok {
			n += len(s)
		}
	}
	b := make([]byte, 0, n+len(args)*(1+binary.MaxVarintLen64))
	for _, a := range args {
		switch v := a.(type) {
		case int64:
			b = append(b, tagInt)
			b = binary.AppendVarint(b, v)
		case string:
			b = append(b, tagText)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		case []byte:
			b = append(b, tagText)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		case nil:
			b = append(b, tagNull)
		default:
			return nil, fmt.Errorf("sqlite: pack ledger row: unexpected %T", a)
		}
	}
	return b, nil
}

var errBadPack = errors.New("sqlite: corrupt packed ledger row")

// ledgerUnpacker decodes rows packed by packLedgerRow. It interns the
// strings that repeat across rows (tenant, operation, shape, model,
// provider, outcome) so a long scan does not allocate them per row.
type ledgerUnpacker struct {
	b      []byte
	err    error
	intern map[string]string
}

// maxInterned bounds the intern table of one scan.
const maxInterned = 4096

func (u *ledgerUnpacker) int() int64 {
	if u.err != nil {
		return 0
	}
	if len(u.b) < 2 || u.b[0] != tagInt {
		u.err = errBadPack
		return 0
	}
	v, k := binary.Varint(u.b[1:])
	if k <= 0 {
		u.err = errBadPack
		return 0
	}
	u.b = u.b[1+k:]
	return v
}

func (u *ledgerUnpacker) bytes() []byte {
	if u.err != nil {
		return nil
	}
	if len(u.b) < 2 || u.b[0] != tagText {
		u.err = errBadPack
		return nil
	}
	l, k := binary.Uvarint(u.b[1:])
	if k <= 0 || l > uint64(len(u.b)-1-k) {
		u.err = errBadPack
		return nil
	}
	s := u.b[1+k : 1+k+int(l)]
	u.b = u.b[1+k+int(l):]
	return s
}

func (u *ledgerUnpacker) str() string { return string(u.bytes()) }

// common returns a string that is likely to repeat, interned.
func (u *ledgerUnpacker) common() string {
	b := u.bytes()
	if s, ok := u.intern[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if len(u.intern) < maxInterned {
		if u.intern == nil {
			u.intern = make(map[string]string)
		}
		u.intern[s] = s
	}
	return s
}

// unpack decodes one packed row (columns in ledgerColumns order) into e.
func (u *ledgerUnpacker) unpack(row []byte, e *groundhog.LedgerEntry) error {
	u.b, u.err = row, nil
	e.ID = u.str()
	e.Time = time.Unix(0, u.int()).UTC()
	e.Tenant = u.common()
	e.Operation = u.common()
	e.RequestHash = u.str()
	e.Shape = groundhog.Shape(u.common())
	e.Model = u.common()
	e.Provider = u.common()
	e.Outcome = groundhog.Outcome(u.common())
	e.Status = int(u.int())
	e.Usage.InputTokens = u.int()
	e.Usage.CachedInputTokens = u.int()
	e.Usage.CacheWriteTokens = u.int()
	e.Usage.OutputTokens = u.int()
	e.Cost = groundhog.Money(u.int())
	e.Saved = groundhog.Money(u.int())
	e.FullCost = groundhog.Money(u.int())
	e.Latency = time.Duration(u.int())
	e.Attempt = int(u.int())
	e.InFlight = u.int() != 0
	e.CacheOn = u.int() != 0
	e.Idempotent = u.int() != 0
	e.Stream = u.int() != 0
	if u.err == nil && len(u.b) == 0 {
		// A row packed before the prompt-cache fields: its net saving was
		// never computed, so it is unknown when the row had cache tokens
		// (never a silent 0).
		e.Usage.CacheWrite1hTokens, e.PromptCacheSaved, e.PromptCacheBreak = 0, 0, ""
		e.PromptCacheLostTokens, e.FanOutHeld, e.ProviderCacheReason = 0, false, ""
		e.Session, e.ParentSession, e.ResultBytes = "", "", 0
		if e.Usage.CachedInputTokens != 0 || e.Usage.CacheWriteTokens != 0 {
			e.PromptCacheSaved = groundhog.CostUnknown
		}
		return nil
	}
	e.Usage.CacheWrite1hTokens = u.int()
	e.PromptCacheSaved = groundhog.Money(u.int())
	e.PromptCacheBreak = u.common()
	e.PromptCacheLostTokens = u.int()
	e.FanOutHeld = u.int() != 0
	e.Session, e.ParentSession, e.ResultBytes = "", "", 0
	if u.err == nil && len(u.b) == 0 {
		e.ProviderCacheReason = "" // packed before the provider's verdict was booked
		return nil
	}
	e.ProviderCacheReason = u.common()
	if u.err == nil && len(u.b) != 0 {
		e.Session = u.common()
		e.ParentSession = u.common()
	}
	if u.err == nil && len(u.b) != 0 {
		e.ResultBytes = u.int()
	}
	if u.err == nil && len(u.b) != 0 {
		u.err = errBadPack
	}
	return u.err
}
