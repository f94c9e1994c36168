package assemble

import (
	"fmt"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// Inline is the content of one evidence blob the caller asked to inline
// after the rendered state (evidence_inline).
type Inline struct {
	Ref     string
	Content string
}

// RenderState renders s as the text the model reads, deterministically:
// the same state and descriptions give the same bytes in every process.
// Sections come in a fixed order (objective, constraints, findings, failed
// approaches, evidence, next step, application fields); every string is
// written verbatim, byte for byte; an empty section reads "(none)". Each
// evidence entry gets one line: for an "ev_" ref its content type, bytes and
// lines from info (or "not stored" when info has no entry for it), for any
// other entry "external reference". Ext is written as canonical JSON
// (RFC 8785), so its key order does not matter. inline blobs follow, each
// under its ref.
func RenderState(s groundhog.WorkingState, info map[string]*groundhog.EvidenceInfo, inline []Inline) string {
	var b strings.Builder
	b.WriteString("# Working state\n\n## Objective\n")
	writeValue(&b, s.Objective)
	b.WriteString("\n## Constraints (the user's exact words; every one must hold)\n")
	writeList(&b, s.Constraints, true)
	b.WriteString("\n## Findings\n")
	writeList(&b, s.Findings, false)
	b.WriteString("\n## Failed approaches (do not retry)\n")
	writeList(&b, s.FailedApproaches, false)
	b.WriteString("\n## Evidence (references; fetch a range with GET /groundhog/v1/evidence/{ref}?lines=a-b)\n")
	if len(s.Evidence) == 0 {
		b.WriteString("(none)\n")
	}
	for _, ref := range s.Evidence {
		b.WriteString("- ")
		b.WriteString(ref)
		b.WriteString(": ")
		b.WriteString(DescribeEvidence(ref, info[ref]))
		b.WriteByte('\n')
	}
	b.WriteString("\n## Next step\n")
	writeValue(&b, s.NextStep)
	if len(s.Ext) > 0 && string(s.Ext) != "null" {
		b.WriteString("\n## Application fields\n")
		if c, err := fingerprint.Canonicalize(s.Ext); err == nil {
			b.Write(c)
		} else {
			b.Write(s.Ext) // stored states are valid JSON; keep the bytes if not
		}
		b.WriteByte('\n')
	}
	for _, in := range inline {
		b.WriteString("\n## Evidence ")
		b.WriteString(in.Ref)
		b.WriteString(" (inline)\n")
		b.WriteString(in.Content)
		if !strings.HasSuffix(in.Content, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// DescribeEvidence is the one-line description of an evidence entry.
func DescribeEvidence(ref string, info *groundhog.EvidenceInfo) string {
	if !strings.HasPrefix(ref, groundhog.EvidenceRefPrefix) {
		return "external reference"
	}
	if info == nil {
		return "not stored"
	}
	ct := info.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	return fmt.Sprintf("%s, %d bytes, %d lines", ct, info.Bytes, info.Lines)
}

func writeValue(b *strings.Builder, v string) {
	if v == "" {
		b.WriteString("(none)\n")
		return
	}
	b.WriteString(v)
	b.WriteByte('\n')
}

func writeList(b *strings.Builder, items []string, numbered bool) {
	if len(items) == 0 {
		b.WriteString("(none)\n")
		return
	}
	for i, it := range items {
		if numbered {
			fmt.Fprintf(b, "%d. ", i+1)
		} else {
			b.WriteString("- ")
		}
		b.WriteString(it)
		b.WriteByte('\n')
	}
}
