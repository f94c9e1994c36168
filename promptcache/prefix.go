package promptcache

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sim"
)

// Kind is what a prefix segment holds.
type Kind uint8

const (
	KindTool         Kind = iota + 1 // one tool definition
	KindInstructions                 // a system block, the instructions, or a leading system/developer message
	KindParams                       // Anthropic tool_choice or thinking: a zero-token segment between system and messages, since changing them invalidates the messages level
	KindMessage                      // one message, or one content block of a message
	KindImage                        // an image (or document) content block
	KindExtraTools                   // a Responses additional_tools item: part of the prompt, never able to hold a breakpoint
)

var kindNames = map[Kind]string{KindTool: "tool", KindInstructions: "instructions", KindParams: "parameters", KindMessage: "message", KindImage: "image", KindExtraTools: "additional_tools"}

func (k Kind) String() string { return kindNames[k] }

// Segment is one piece of a prompt's prefix, in the provider's order (tools,
// then instructions, then messages), fingerprinted without its text.
type Segment struct {
	Kind Kind
	// Start and End are the segment's token offsets in the prompt, as
	// groundhog estimates them (sim.CountTokens plus sim.MessageOverhead per
	// message and tool): [Start, End).
	Start, End int
	// Hash is a 64-bit hash of the segment's bytes with cache markers
	// (cache_control, prompt_cache_breakpoint) removed: a marker does not
	// change what the provider caches.
	Hash uint64
	// Chain is the hash of the previous segment's Chain and this Hash, so
	// two prompts agree on Chain at segment i iff they agree on segments
	// 0..i.
	Chain uint64
	// Masked is Hash with volatile values (timestamps, UUIDs, …) masked;
	// Vol packs a 5-bit digest of the values per pattern.
	Masked uint64
	Vol    uint32
	// Marker is true when the client put a cache marker on this segment;
	// MarkerTTL is the TTL it asks for (0: the provider's default).
	Marker    bool
	MarkerTTL time.Duration
	// Message is the index of the message or input item the segment belongs
	// to (-1 for tools, system, instructions and parameters).
	Message int

	top        string // top-level field: tools, system, messages, input, instructions, …
	i, j, k    int    // indexes under top (-1 when unused)
	sub        string // name between i and j: content, output
	val        span   // the value's bytes in the body
	text       span   // its "text" member, when it has one
	mark       span   // its marker member, when it has one
	scanned    bool   // text and mark are filled in
	markable   bool   // an injected marker may go here
	wrap       span   // a plain-string value (Anthropic string system or message content) an injected marker turns into one text block
	turnEnd    bool   // the last block of a user turn (user message, tool result)
	textTokens bool   // value is text (tokens counted on the decoded string)
	noTokens   bool   // a setting, not prompt text: zero tokens (Gemini toolConfig)
}

// Path returns the JSON path of the segment's value in the request body,
// e.g. "tools[2]", "system[0]", "messages[4].content[1]", "input[3].output[0]".
func (s *Segment) Path() string {
	p := s.top
	if s.i >= 0 {
		p += "[" + strconv.Itoa(s.i) + "]"
	}
	if s.sub != "" {
		p += "." + s.sub
		if s.j >= 0 {
			p += "[" + strconv.Itoa(s.j) + "]"
		}
	}
	return p
}

// Prefix is the prefix model of one request: its segments in the order the
// provider caches them, plus what decides how the provider caches.
type Prefix struct {
	Shape    groundhog.Shape
	Model    string
	CacheKey string // prompt_cache_key ("" when unset)
	Segments []Segment
	Tokens   int // estimated prompt tokens
	// NotApplicable is true for embeddings: an embedding input has no
	// cacheable prefix to speak of.
	NotApplicable bool
	// Markers counts the client's cache markers against the provider's
	// limit (Anthropic: every cache_control, the top-level one included).
	Markers int
	// AutoMarker is Anthropic's top-level cache_control (a breakpoint on the
	// last cacheable block).
	AutoMarker bool
	// Explicit is true for a Responses request in explicit-only mode
	// (prompt_cache_options.mode "explicit"): the provider writes only at
	// breakpoints.
	Explicit bool
	// TTL is the lifetime the request asks for its entries (the longest
	// marker TTL, prompt_cache_options.ttl or prompt_cache_retention), 0
	// for the provider's default.
	TTL time.Duration

	body   []byte
	root   span
	fields topFields // fields.go
}

// markerKey returns the JSON key of the shape's cache marker.
func markerKey(shape groundhog.Shape) string {
	switch shape {
	case groundhog.ShapeMessages:
		return "cache_control"
	case groundhog.ShapeConverse:
		return "cachePoint"
	case groundhog.ShapeGemini:
		return geminiNoMarker
	}
	return "prompt_cache_breakpoint"
}

// quotedMarkers holds markerKey(shape) in quotes, for every shape with a
// marker key of its own (made once: a parse does not allocate it).
var quotedMarkers = map[string][]byte{}

func init() {
	for _, sh := range []groundhog.Shape{groundhog.ShapeMessages, groundhog.ShapeConverse, groundhog.ShapeGemini, groundhog.ShapeChat} {
		k := markerKey(sh)
		quotedMarkers[k] = []byte(`"` + k + `"`)
	}
}

// quotedMarkerKey returns markerKey(shape) in quotes. The bytes are shared:
// never write to them.
func quotedMarkerKey(shape groundhog.Shape) []byte {
	k := markerKey(shape)
	if q, ok := quotedMarkers[k]; ok {
		return q
	}
	return []byte(`"` + k + `"`) // a key init did not list
}

// Parse builds the prefix model of a request body of shape. The body must be
// a JSON object; errors are *groundhog.Error with code EINVALID. The
// returned Prefix refers to body, which must not change while it is used.
func Parse(shape groundhog.Shape, body []byte) (*Prefix, error) {
	return parse(shape, body, "", nil, nil)
}

// ParseModel is Parse for a body that does not name its model (Bedrock
// Converse and InvokeModel take it from the path): the prefix's Model is
// model unless the body names one.
func ParseModel(shape groundhog.Shape, model string, body []byte) (*Prefix, error) {
	return parse(shape, body, model, nil, nil)
}

// parse is ParseModel with a hint: hint, given the prefix's top-level fields
// (model, cache key), returns the newest earlier prompt of its chain (or
// nil). Segments whose chain value matches that prompt's at the same index
// take their token count and volatile signature from it instead of
// counting again: a growing conversation costs the counting of its new
// turns only. hint's record must not change afterwards (records never do
// once published). quotes, when not nil, is the body's quote bitmap
// (Request.Quotes).
func parse(shape groundhog.Shape, body []byte, model string, hint func(*Prefix) *promptRec, quotes []uint64) (*Prefix, error) {
	if !shape.Valid() {
		return nil, groundhog.Errorf(groundhog.EINVALID, "unknown API shape %q", shape)
	}
	s := skipWS(body, 0)
	if s >= len(body) || body[s] != '{' {
		return nil, groundhog.Errorf(groundhog.EINVALID, "request body must be a JSON object")
	}
	mk := quotedMarkerKey(shape)
	var ix *index
	if !fullPath {
		ix = newIndex(mk)
		defer ix.release()
	}
	e, err := ix.walk(body, s, 0, quotes)
	if err == nil && skipWS(body, e) != len(body) {
		err = syntaxErr(e, "trailing data")
	}
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EINVALID, "request body is not valid JSON", err)
	}
	p := &Prefix{Shape: shape, body: body, root: span{s, e}}
	if ks, ok := ix.children(p.root); ok {
		p.fields = make(topFields, 0, len(ks))
	}
	bd := builder{p: p, mk: mk, mkKey: markerKey(shape), ix: ix}
	bd.members(p.root, func(m member) error {
		p.fields = append(p.fields, topField{m.key, m.val})
		return nil
	})
	p.Model = str(body, p.fields.get("model"))
	if p.Model == "" {
		p.Model = model
	}
	p.CacheKey = str(body, p.fields.get("prompt_cache_key"))
	if ix != nil {
		// Room for one segment per top-level element (tools, messages):
		// the common case needs no growing.
		n := 4
		for _, k := range []string{"tools", "functions", "system", "messages", "input", "contents"} {
			if ks, ok := ix.children(p.fields.get(k)); ok {
				n += len(ks)
			}
		}
		bd.segCap = n
	}
	if hint != nil && shape != groundhog.ShapeEmbeddings {
		bd.hint = hint(p)
	}
	switch shape {
	case groundhog.ShapeEmbeddings:
		p.NotApplicable = true
		return p, nil
	case groundhog.ShapeMessages:
		err = bd.messages()
	case groundhog.ShapeChat:
		err = bd.chat()
	case groundhog.ShapeResponses:
		err = bd.responses()
	case groundhog.ShapeConverse:
		err = bd.converse()
	case groundhog.ShapeGemini:
		err = bd.gemini()
	}
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EINVALID, "request body", err)
	}
	p.Tokens = bd.tokens
	return p, nil
}

// volatileMessages is how many leading messages are scanned for volatile
// values besides tools and instructions: where agents render "current time"
// or session ids (the system prompt, the first user turn). A value that
// changes in a later message is an edit of the history (history_edited);
// not scanning the transcript keeps the stage's cost near the
// fingerprint's.
const volatileMessages = 2

// builder appends segments to a Prefix.
type builder struct {
	p       *Prefix
	mk      []byte // `"cache_control"` or `"prompt_cache_breakpoint"`
	mkKey   string // the same unquoted
	others  []span // scanObj's reused buffer of others
	tokens  int
	chain   uint64
	scratch []byte
	vm      []volMatch
	hint    *promptRec // the earlier prompt whose matching segments need no counting
	d       *xxhash.Digest
	ix      *index // the walk's record of the body (nil on the full path: walk again)
	segCap  int    // the Segments capacity to start with
	unesc   []byte // a decoded string being counted
}

// fullPath turns off the index and the fast token count: every look-up
// walks the body again and every count is sim.CountTokens, as before they
// existed. Tests set it to pin that both paths give the same prefix model.
var fullPath = false

func (bd *builder) members(v span, fn func(m member) error) error {
	if bd.ix == nil {
		return members(bd.p.body, v, fn)
	}
	return bd.ix.members(bd.p.body, v, fn)
}

func (bd *builder) elems(v span, fn func(i int, e span) error) error {
	if bd.ix == nil {
		return elems(bd.p.body, v, fn)
	}
	return bd.ix.elems(bd.p.body, v, fn)
}

func (bd *builder) field(v span, key string) span {
	if bd.ix == nil {
		return field(bd.p.body, v, key)
	}
	return bd.ix.field(bd.p.body, v, key)
}

// scanObj reads the object at v (scanObj). Its others, when asked for, are
// in a buffer the builder reuses: they hold until the next scanObj asking
// for others.
func (bd *builder) scanObj(v span, others bool) objInfo {
	var o objInfo
	if bd.ix == nil {
		o = scanObjTo(bd.p.body, v, bd.mkKey, others, bd.others)
	} else {
		o = bd.ix.scanObj(bd.p.body, v, bd.mkKey, others, bd.others)
	}
	if others {
		bd.others = o.others
	}
	return o
}

// markers counts the marker in v: bytes.Count of the marker pattern. A
// Converse cachePoint is a block of its own, never a member of a segment's
// value (converse.go): a "cachePoint" key inside a block (a tool's input)
// is content, not a marker. Gemini has no marker at all (gemini.go).
func (bd *builder) markers(v span) int {
	if bd.p.Shape == groundhog.ShapeConverse || bd.p.Shape == groundhog.ShapeGemini {
		return 0
	}
	if bd.ix == nil {
		return bytes.Count(bd.p.body[v.start:v.end], bd.mk)
	}
	return bd.ix.count(v)
}

// add fingerprints the value at seg.val (with head, the bytes of the
// message fields other than its content, mixed in) and appends it.
// overhead is the framing tokens charged before it.
func (bd *builder) add(seg Segment, head []span, overhead int) {
	bd.addScanned(seg, head, overhead, nil)
}

// addScanned is add for a value whose members were scanned already (o; nil
// when not): its text and marker are taken from o.
func (bd *builder) addScanned(seg Segment, head []span, overhead int, o *objInfo) {
	b := bd.p.body
	raw := b[seg.val.start:seg.val.end]
	markers := bd.markers(seg.val)
	if o != nil {
		seg.text, seg.mark = o.text, o.marker
	} else if !seg.scanned && b[seg.val.start] == '{' {
		o := bd.scanObj(seg.val, false)
		seg.text, seg.mark = o.text, o.marker
	}
	// Hash the message's other fields, then the block, without copying
	// them; only a block with markers is copied (to strip them).
	if bd.d == nil {
		bd.d = xxhash.New()
	}
	d := bd.d
	d.Reset()
	for _, h := range head {
		if bd.markers(h) > 0 {
			bd.scratch = bd.strip(bd.scratch[:0], h)
			d.Write(bd.scratch)
		} else {
			d.Write(b[h.start:h.end])
		}
		d.Write([]byte{0})
	}
	data := raw
	if markers > 0 {
		bd.scratch = bd.strip(bd.scratch[:0], seg.val)
		data = bd.scratch
	}
	d.Write(data)
	seg.Hash = d.Sum64()
	var c [16]byte
	putU64(c[:8], bd.chain)
	putU64(c[8:], seg.Hash)
	seg.Chain = xxhash.Sum64(c[:])
	bd.chain = seg.Chain
	seg.Start = bd.tokens
	n := overhead
	if idx := len(bd.p.Segments); bd.hint != nil && idx < len(bd.hint.segs) && bd.hint.segs[idx].Chain == seg.Chain {
		// Same segment at the same place as in the earlier prompt: same
		// tokens, same volatile signature.
		h := &bd.hint.segs[idx]
		n = int(h.End) - seg.Start
		seg.Masked, seg.Vol = uint64(h.Masked), h.Vol
	} else {
		seg.Masked = seg.Hash
		if seg.Kind != KindMessage && seg.Kind != KindImage || seg.Message < volatileMessages {
			seg.Masked, seg.Vol, bd.vm = volatileSig(data, seg.Hash, bd.vm)
		}
		n += bd.count(&seg, data)
	}
	bd.tokens += n
	seg.End = bd.tokens
	if !isNull(b, seg.mark) {
		seg.Marker = true
		if b[seg.mark.start] == '{' {
			seg.MarkerTTL = parseTTL(str(b, bd.field(seg.mark, "ttl")))
		}
		bd.p.TTL = max(bd.p.TTL, seg.MarkerTTL)
	}
	// Every marker counts against the limit, nested ones (inside a
	// tool_result) too.
	bd.p.Markers += markers
	if bd.p.Segments == nil && bd.segCap > 0 {
		bd.p.Segments = getSegs(bd.segCap) // segpool.go
	}
	bd.p.Segments = append(bd.p.Segments, seg)
}

// strip appends the bytes of v to dst with every marker member removed,
// together with the comma that joined it to its neighbour, so a body with a
// marker added right after an object's last member strips to exactly the
// body without it.
func (bd *builder) strip(dst []byte, v span) []byte {
	b := bd.p.body
	if !bytes.Contains(b[v.start:v.end], bd.mk) {
		return append(dst, b[v.start:v.end]...)
	}
	app := func(from, to int) {
		if from < to {
			dst = append(dst, b[from:to]...)
		}
	}
	pos := v.start
	switch b[v.start] {
	case '{':
		var ms []member
		members(b, v, func(m member) error { ms = append(ms, m); return nil })
		key := bd.mk[1 : len(bd.mk)-1]
		for k, m := range ms {
			switch {
			case bytes.Equal(m.key, key):
				switch {
				case k > 0:
					app(pos, ms[k-1].whole.end)
					pos = m.whole.end
				case len(ms) > 1:
					app(pos, m.whole.start)
					pos = ms[1].whole.start
				default:
					app(pos, m.whole.start)
					pos = m.whole.end
				}
			case bytes.Contains(b[m.val.start:m.val.end], bd.mk) && pos <= m.val.start:
				app(pos, m.val.start)
				dst = bd.strip(dst, m.val)
				pos = m.val.end
			}
		}
	case '[':
		elems(b, v, func(_ int, e span) error {
			if bytes.Contains(b[e.start:e.end], bd.mk) {
				app(pos, e.start)
				dst = bd.strip(dst, e)
				pos = e.end
			}
			return nil
		})
	}
	app(pos, v.end)
	return dst
}

func putU64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

// parseTTL reads "5m", "1h", "30m", "24h" (0 when empty or unknown).
func parseTTL(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// isTrue reports whether the value at v is the JSON literal true.
func isTrue(b []byte, v span) bool {
	return v.ok() && string(b[v.start:v.end]) == "true"
}

func seg(kind Kind, top string, i int, v span) Segment {
	return Segment{Kind: kind, top: top, i: i, j: -1, k: -1, val: v, Message: -1}
}

// tools appends one segment per tool of the array at top.
func (bd *builder) tools(top string, markable bool) error {
	v := bd.p.fields.get(top)
	if isNull(bd.p.body, v) {
		return nil
	}
	b := bd.p.body
	return bd.elems(v, func(i int, e span) error {
		if bd.p.Shape == groundhog.ShapeMessages && b[e.start] == '{' && isTrue(b, bd.field(e, "defer_loading")) {
			// Not in Anthropic's prompt: tool search loads a deferred
			// tool into the conversation when it finds it, so adding or
			// removing one keeps the cached prefix (and it can hold no
			// breakpoint).
			return nil
		}
		s := seg(KindTool, top, i, e)
		s.markable = markable && bd.p.body[e.start] == '{'
		bd.add(s, nil, sim.MessageOverhead)
		return nil
	})
}

// messages parses an Anthropic Messages body: tools, system, parameters,
// messages.
func (bd *builder) messages() error {
	b, p := bd.p.body, bd.p
	if err := bd.tools("tools", true); err != nil {
		return err
	}
	if sys := p.fields.get("system"); !isNull(b, sys) {
		if b[sys.start] == '"' {
			s := seg(KindInstructions, "system", -1, sys)
			s.textTokens = true
			// A string system prompt is one text block to the provider:
			// injection wraps it in one to place the marker.
			if sys.end-sys.start > 2 {
				s.markable, s.wrap = true, sys
			}
			bd.add(s, nil, sim.MessageOverhead)
		} else if err := bd.elems(sys, func(i int, e span) error {
			s := seg(KindInstructions, "system", i, e)
			s.markable = b[e.start] == '{' && str(b, bd.field(e, "text")) != ""
			oh := 0
			if i == 0 {
				oh = sim.MessageOverhead
			}
			bd.add(s, nil, oh)
			return nil
		}); err != nil {
			return fmt.Errorf("system: %w", err)
		}
	}
	// tool_choice and thinking: zero-token segments between system and
	// messages, so that changing them diverges there, before the messages
	// (whose cached level they invalidate).
	for _, k := range []string{"tool_choice", "thinking"} {
		if v := p.fields.get(k); v.ok() {
			bd.add(seg(KindParams, k, -1, v), nil, 0)
		}
	}
	if cc := p.fields.get("cache_control"); !isNull(b, cc) {
		p.AutoMarker = true
		p.Markers++
		p.TTL = max(p.TTL, parseTTL(str(b, bd.field(cc, "ttl"))))
	}
	msgs := p.fields.get("messages")
	if isNull(b, msgs) {
		return nil
	}
	var blocks []span
	return bd.elems(msgs, func(i int, m span) error {
		if b[m.start] != '{' {
			return syntaxErr(m.start, "a message must be an object")
		}
		mo := bd.scanObj(m, true)
		content := mo.content
		userTurn := strView(b, mo.role) == "user" // compared only: no copy
		if !content.ok() || b[content.start] != '[' {
			s := seg(KindMessage, "messages", i, m)
			s.Message, s.turnEnd = i, userTurn
			if content.ok() && b[content.start] == '"' && content.end-content.start > 2 {
				s.markable, s.wrap = true, content
			}
			bd.add(s, nil, sim.MessageOverhead)
			return nil
		}
		head := mo.others
		blocks = blocks[:0]
		bd.elems(content, func(_ int, e span) error { blocks = append(blocks, e); return nil })
		for j, e := range blocks {
			s := seg(KindMessage, "messages", i, e)
			s.sub, s.j, s.Message = "content", j, i
			typ := ""
			if b[e.start] == '{' {
				o := bd.scanObj(e, false)
				typ = strView(b, o.typ) // compared only: no copy
				s.text, s.mark, s.scanned = o.text, o.marker, true
			}
			switch typ {
			case "image", "document":
				s.Kind = KindImage
			}
			// Anthropic refuses cache_control on empty text and on thinking
			// blocks.
			s.markable = b[e.start] == '{' && typ != "thinking" && typ != "redacted_thinking" &&
				!(typ == "text" && (!s.text.ok() || s.text.end-s.text.start <= 2))
			s.turnEnd = userTurn && j == len(blocks)-1
			oh := 0
			var h []span
			if j == 0 {
				oh, h = sim.MessageOverhead, head
			}
			bd.add(s, h, oh)
		}
		if len(blocks) == 0 {
			s := seg(KindMessage, "messages", i, m)
			s.Message = i
			bd.add(s, nil, sim.MessageOverhead)
		}
		return nil
	})
}

// chat parses an OpenAI Chat Completions body: tools, then messages (the
// leading system/developer messages are the instructions). Chat has no
// explicit breakpoints: nothing is markable.
func (bd *builder) chat() error {
	b, p := bd.p.body, bd.p
	if err := bd.tools("tools", false); err != nil {
		return err
	}
	// functions (the legacy form) are tools too.
	if err := bd.tools("functions", false); err != nil {
		return err
	}
	msgs := p.fields.get("messages")
	if isNull(b, msgs) {
		return nil
	}
	lead := true
	return bd.elems(msgs, func(i int, m span) error {
		if b[m.start] != '{' {
			return syntaxErr(m.start, "a message must be an object")
		}
		var o *objInfo
		var role string
		if bd.ix != nil {
			// One pass over the recorded members gives the role, the
			// content and what add needs (text, marker): the same spans
			// field and scanObj find, the last duplicate winning.
			info := bd.scanObj(m, false)
			o, role = &info, strView(b, info.role) // compared only: no copy
		} else {
			role = str(b, bd.field(m, "role"))
		}
		lead = lead && (role == "system" || role == "developer")
		kind := KindMessage
		if lead {
			kind = KindInstructions
		}
		return bd.openAIMessageInfo(kind, "messages", i, m, role == "user" || role == "tool", o)
	})
}

// openAIMessage appends a chat message or a Responses message item: one
// segment when its content is a string, else one per content part (the
// other fields mixed into the first).
func (bd *builder) openAIMessage(kind Kind, top string, i int, m span, userTurn bool) error {
	return bd.openAIMessageInfo(kind, top, i, m, userTurn, nil)
}

// openAIMessageInfo is openAIMessage with the message's members already
// scanned (o, nil when not).
func (bd *builder) openAIMessageInfo(kind Kind, top string, i int, m span, userTurn bool, o *objInfo) error {
	b := bd.p.body
	var content span
	if o != nil {
		content = o.content
	} else {
		content = bd.field(m, "content")
	}
	if !content.ok() || b[content.start] != '[' {
		s := seg(kind, top, i, m)
		s.Message, s.turnEnd = i, userTurn
		if kind == KindInstructions {
			s.Message = -1
		}
		bd.addScanned(s, nil, sim.MessageOverhead, o)
		return nil
	}
	var head []span
	bd.members(m, func(mb member) error {
		if string(mb.key) != "content" {
			head = append(head, mb.whole)
		}
		return nil
	})
	bd.parts(kind, top, i, "content", content, head, userTurn)
	return nil
}

// parts appends one segment per element of the array at v (content parts or
// function_call_output.output items).
func (bd *builder) parts(kind Kind, top string, i int, sub string, v span, head []span, userTurn bool) {
	b := bd.p.body
	var ps []span
	bd.elems(v, func(_ int, e span) error { ps = append(ps, e); return nil })
	if len(ps) == 0 {
		s := seg(kind, top, i, v)
		s.Message = i
		bd.add(s, head, sim.MessageOverhead)
		return
	}
	for j, e := range ps {
		s := seg(kind, top, i, e)
		s.sub, s.j, s.Message = sub, j, i
		if kind == KindInstructions {
			s.Message = -1
		}
		typ := ""
		if b[e.start] == '{' {
			typ = strView(b, bd.field(e, "type")) // compared only: no copy
		}
		switch typ {
		case "image_url", "input_image", "input_file", "file":
			s.Kind = KindImage
		}
		s.markable = bd.p.Shape == groundhog.ShapeResponses && typ == "input_text"
		s.turnEnd = userTurn && j == len(ps)-1
		oh := 0
		var h []span
		if j == 0 {
			oh, h = sim.MessageOverhead, head
		}
		bd.add(s, h, oh)
	}
}

// responses parses an OpenAI Responses body: tools, instructions, input
// items (leading system/developer messages are instructions too).
func (bd *builder) responses() error {
	b, p := bd.p.body, bd.p
	if opts := p.fields.get("prompt_cache_options"); !isNull(b, opts) {
		p.Explicit = str(b, bd.field(opts, "mode")) == "explicit"
		p.TTL = max(p.TTL, parseTTL(str(b, bd.field(opts, "ttl"))))
	}
	if r := str(b, p.fields.get("prompt_cache_retention")); r != "" && r != "in_memory" && r != "in-memory" {
		p.TTL = max(p.TTL, parseTTL(r))
	}
	if err := bd.tools("tools", false); err != nil {
		return err
	}
	if ins := p.fields.get("instructions"); !isNull(b, ins) {
		s := seg(KindInstructions, "instructions", -1, ins)
		s.textTokens = b[ins.start] == '"'
		bd.add(s, nil, sim.MessageOverhead)
	}
	in := p.fields.get("input")
	if isNull(b, in) {
		return nil
	}
	if b[in.start] == '"' {
		s := seg(KindMessage, "input", -1, in)
		s.textTokens, s.Message, s.turnEnd = true, 0, true
		bd.add(s, nil, sim.MessageOverhead)
		return nil
	}
	lead := true
	return bd.elems(in, func(i int, it span) error {
		if b[it.start] != '{' {
			return syntaxErr(it.start, "an input item must be an object")
		}
		typ := strView(b, bd.field(it, "type")) // compared only: no copy
		role := strView(b, bd.field(it, "role"))
		lead = lead && (role == "system" || role == "developer")
		switch {
		case typ == "additional_tools":
			s := seg(KindExtraTools, "input", i, it)
			s.Message = i
			bd.add(s, nil, sim.MessageOverhead)
		case typ == "function_call_output":
			out := bd.field(it, "output")
			if out.ok() && b[out.start] == '[' {
				var head []span
				bd.members(it, func(mb member) error {
					if string(mb.key) != "output" {
						head = append(head, mb.whole)
					}
					return nil
				})
				bd.parts(KindMessage, "input", i, "output", out, head, true)
				return nil
			}
			s := seg(KindMessage, "input", i, it)
			s.Message, s.turnEnd = i, true
			bd.add(s, nil, sim.MessageOverhead)
		case role != "":
			kind := KindMessage
			if lead {
				kind = KindInstructions
			}
			return bd.openAIMessage(kind, "input", i, it, role == "user")
		default:
			s := seg(KindMessage, "input", i, it)
			s.Message = i
			bd.add(s, nil, sim.MessageOverhead)
		}
		return nil
	})
}

// view returns b as a string without copying, for a call that only reads
// it while b does not change (CountTokens on a segment's bytes: copying
// 200 KB per request would double the garbage the stage makes).
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// count returns the tokens of a segment's content (framing excluded): of
// its text when it is text, else of its JSON.
func (bd *builder) count(seg *Segment, data []byte) int {
	b := bd.p.body
	if !fullPath {
		switch {
		case seg.Kind == KindParams || seg.noTokens:
			return 0
		case seg.textTokens:
			return bd.countString(seg.val)
		case seg.text.ok() && b[seg.text.start] == '"':
			return bd.countString(seg.text)
		}
		return countTokens(data)
	}
	switch {
	case seg.Kind == KindParams || seg.noTokens:
		return 0
	case seg.textTokens:
		return sim.CountTokens(strView(b, seg.val))
	case seg.text.ok() && b[seg.text.start] == '"':
		return sim.CountTokens(strView(b, seg.text))
	}
	return sim.CountTokens(view(data))
}
