package promptcache

import (
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"io"
	"time"
)

// snapshotVersion tags the Snapshot format; Restore refuses other versions.
const snapshotVersion = 1

type snapHeader struct {
	Version int
	Chains  int
}

type snapChain struct {
	Key, OpKey string
	Prompts    []snapPrompt
}

type snapPrompt struct {
	Segs     []byte // 32 bytes per segment, little-endian
	Tokens   uint32
	LastUsed int64
	TTL      int64
	Implicit bool
	Model    string
	Key      string
}

// Snapshot writes the tracked chains to w (gob; fingerprints and token
// offsets only, never prompt text), least recently used first, so that
// Restore rebuilds the same LRU order. Call it on shutdown.
func (t *Tracker) Snapshot(w io.Writer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	enc := gob.NewEncoder(w)
	if err := enc.Encode(snapHeader{Version: snapshotVersion, Chains: t.lru.Len()}); err != nil {
		return fmt.Errorf("promptcache snapshot: %w", err)
	}
	for el := t.lru.Back(); el != nil; el = el.Prev() {
		ch := el.Value.(*chain)
		sc := snapChain{Key: ch.key, OpKey: ch.opKey}
		for _, p := range ch.prompts {
			buf := make([]byte, len(p.segs)*segRecSize)
			for i, s := range p.segs {
				o := buf[i*segRecSize:]
				binary.LittleEndian.PutUint64(o, s.Hash)
				binary.LittleEndian.PutUint64(o[8:], s.Chain)
				binary.LittleEndian.PutUint32(o[16:], s.Masked)
				binary.LittleEndian.PutUint32(o[20:], s.Vol)
				binary.LittleEndian.PutUint32(o[24:], s.End)
				o[28], o[29] = byte(s.Kind), s.Stored
			}
			sc.Prompts = append(sc.Prompts, snapPrompt{Segs: buf, Tokens: p.tokens, LastUsed: p.lastUsed,
				TTL: int64(p.ttl), Implicit: p.implicit, Model: p.model, Key: p.key})
		}
		if err := enc.Encode(sc); err != nil {
			return fmt.Errorf("promptcache snapshot: %w", err)
		}
	}
	return nil
}

// Restore reads a Snapshot into t, adding to what t holds (a chain in both
// takes the snapshot's), within t's bounds. Call it on start, before the
// first Before.
func (t *Tracker) Restore(r io.Reader) error {
	dec := gob.NewDecoder(r)
	var h snapHeader
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("promptcache restore: %w", err)
	}
	if h.Version != snapshotVersion {
		return fmt.Errorf("promptcache restore: snapshot version %d, want %d", h.Version, snapshotVersion)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for range h.Chains {
		var sc snapChain
		if err := dec.Decode(&sc); err != nil {
			return fmt.Errorf("promptcache restore: %w", err)
		}
		if el, ok := t.chains[sc.Key]; ok {
			t.drop(el)
		}
		ch := &chain{key: sc.Key, opKey: sc.OpKey, bytes: chainOverhead + int64(len(sc.Key)+len(sc.OpKey))}
		for _, sp := range sc.Prompts {
			if len(sp.Segs)%segRecSize != 0 {
				return fmt.Errorf("promptcache restore: corrupt segment table")
			}
			p := &promptRec{exactSeg: -1, segs: make([]segRec, len(sp.Segs)/segRecSize), tokens: sp.Tokens, lastUsed: sp.LastUsed,
				ttl: time.Duration(sp.TTL), implicit: sp.Implicit, model: sp.Model, key: sp.Key}
			for i := range p.segs {
				o := sp.Segs[i*segRecSize:]
				p.segs[i] = segRec{Hash: binary.LittleEndian.Uint64(o), Chain: binary.LittleEndian.Uint64(o[8:]),
					Masked: binary.LittleEndian.Uint32(o[16:]), Vol: binary.LittleEndian.Uint32(o[20:]),
					End: binary.LittleEndian.Uint32(o[24:]), Kind: Kind(o[28]), Stored: o[29]}
			}
			ch.prompts = append(ch.prompts, p)
			ch.bytes += promptBytes(p)
		}
		t.chains[ch.key] = t.lru.PushFront(ch)
		t.byOp[ch.opKey] = ch
		t.bytes += ch.bytes
		t.evict()
	}
	return nil
}
