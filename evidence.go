package groundhog

import (
	"context"
	"io"
)

// EvidenceStore keeps evidence blobs: content-addressed, deduplicated per
// tenant, stored and read as streams so a blob is never held whole in
// memory. A blob's ref is EvidenceRefPrefix + hex SHA-256 of its bytes. A
// blob has Lines lines: its '\n' count, plus one when it does not end in
// '\n' (so "" has 0 lines, "a" and "a\n" one, "a\nb" two); line k runs from
// just after the (k-1)-th '\n' through the k-th (or the end).
//
// Every method is tenant-scoped: another tenant's ref behaves exactly like
// one that does not exist (ENOTFOUND), so a ref never reveals that some
// other tenant stored the same bytes.
//
// PutEvidence reads r to its end and stores the bytes under their ref for
// tenant, with contentType (kept from the first upload of those bytes). When
// tenant already has that ref it stores nothing and returns the stored
// info with created false. quota > 0 bounds the tenant's total stored bytes
// (EvidenceUsage): a new blob that would pass it is refused with EQUOTA and
// nothing is stored (a duplicate never counts against it). A read error
// from r is returned (wrapped) and nothing is stored.
//
// StatEvidence returns the info of tenant's ref, or ENOTFOUND.
//
// ReadEvidence returns a reader of bytes [off, off+n) of the blob (n < 0:
// to the end); the caller closes it. off and n must lie within the blob
// (EINVALID otherwise; range checks against the size belong to the caller,
// which has StatEvidence). Memory stays bounded by the store's chunk size
// whatever n is.
//
// EvidenceLines maps lines first..last (1-based, inclusive) to the byte
// range [off, off+n) that holds them. first < 1 or last < first is
// EINVALID; first past the last line is ERANGE; last past it is clamped to
// the last line (like an HTTP byte range's last-pos).
//
// EvidenceUsage returns the bytes of all of tenant's blobs.
type EvidenceStore interface {
	PutEvidence(ctx context.Context, tenant, contentType string, r io.Reader, quota int64) (info *EvidenceInfo, created bool, err error)
	StatEvidence(ctx context.Context, tenant, ref string) (*EvidenceInfo, error)
	ReadEvidence(ctx context.Context, tenant, ref string, off, n int64) (io.ReadCloser, error)
	EvidenceLines(ctx context.Context, tenant, ref string, first, last int64) (off, n int64, err error)
	EvidenceUsage(ctx context.Context, tenant string) (int64, error)
}

// ValidEvidenceRef reports whether ref is EvidenceRefPrefix followed by 64
// lowercase hex digits.
func ValidEvidenceRef(ref string) bool {
	if len(ref) != len(EvidenceRefPrefix)+64 || ref[:len(EvidenceRefPrefix)] != EvidenceRefPrefix {
		return false
	}
	for _, c := range ref[len(EvidenceRefPrefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
