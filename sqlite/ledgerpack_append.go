package sqlite

import (
	"encoding/binary"

	"github.com/groundhog-ai/groundhog"
)

// appendPackedLedger appends the packed form of e to b: the same bytes as
// packLedgerRow over the values of packLedger, written field by field with
// no []driver.Value (which boxed ~28 values into interfaces: most of the
// objects the ledger committer allocated per row, docs/design/0004-sqlite-ledger-blocks.md).
func appendPackedLedger(b []byte, e *groundhog.LedgerEntry) []byte {
	b = packText(b, e.ID)
	b = packInt(b, e.Time.UnixNano())
	b = packText(b, e.Tenant)
	b = packText(b, e.Operation)
	b = packText(b, e.RequestHash)
	b = packText(b, string(e.Shape))
	b = packText(b, e.Model)
	b = packText(b, e.Provider)
	b = packText(b, string(e.Outcome))
	b = packInt(b, int64(e.Status))
	b = packInt(b, e.Usage.InputTokens)
	b = packInt(b, e.Usage.CachedInputTokens)
	b = packInt(b, e.Usage.CacheWriteTokens)
	b = packInt(b, e.Usage.OutputTokens)
	b = packInt(b, int64(e.Cost))
	b = packInt(b, int64(e.Saved))
	b = packInt(b, int64(e.FullCost))
	b = packInt(b, int64(e.Latency))
	b = packInt(b, int64(e.Attempt))
	b = packInt(b, int64(boolInt(e.InFlight)))
	b = packInt(b, int64(boolInt(e.CacheOn)))
	b = packInt(b, int64(boolInt(e.Idempotent)))
	b = packInt(b, int64(boolInt(e.Stream)))
	// Prompt-cache fields, after the original 23 (see packLedger).
	b = packInt(b, e.Usage.CacheWrite1hTokens)
	b = packInt(b, int64(e.PromptCacheSaved))
	b = packText(b, e.PromptCacheBreak)
	b = packInt(b, e.PromptCacheLostTokens)
	b = packInt(b, int64(boolInt(e.FanOutHeld)))
	// The provider's cache verdict, after them (a row packed before it
	// ends at FanOutHeld).
	b = packText(b, e.ProviderCacheReason)
	// Agent-run fields, after the verdict, then a tool call's result
	// bytes; a row with none of them stops here, one with no result bytes
	// after the agent-run fields (rows packed before they existed read the
	// same).
	switch packedExtras(e) {
	case 0:
		return b
	case 2:
		b = packText(b, e.Session)
		return packText(b, e.ParentSession)
	}
	b = packText(b, e.Session)
	b = packText(b, e.ParentSession)
	return packInt(b, e.ResultBytes)
}

// packedExtras is how many optional fields follow ProviderCacheReason in
// e's packed form: 0, 2 (Session, ParentSession) or 3 (and ResultBytes).
func packedExtras(e *groundhog.LedgerEntry) int {
	switch {
	case e.ResultBytes != 0:
		return 3
	case e.Session != "" || e.ParentSession != "":
		return 2
	}
	return 0
}

// packedLedgerSize bounds the packed size of e, to size a buffer once.
func packedLedgerSize(e *groundhog.LedgerEntry) int {
	return len(e.ID) + len(e.Tenant) + len(e.Operation) + len(e.RequestHash) + len(e.Shape) + len(e.Model) +
		len(e.Provider) + len(e.Outcome) + len(e.PromptCacheBreak) + len(e.ProviderCacheReason) + len(e.Session) + len(e.ParentSession) + 32*(1+binary.MaxVarintLen64)
}

func packInt(b []byte, v int64) []byte {
	return binary.AppendVarint(append(b, tagInt), v)
}

func packText(b []byte, s string) []byte {
	b = binary.AppendUvarint(append(b, tagText), uint64(len(s)))
	return append(b, s...)
}
