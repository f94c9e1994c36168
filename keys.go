package groundhog

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	mrand "math/rand/v2"
	"time"
)

// APIKey is a gateway key as stored: only the hash of the secret is kept.
type APIKey struct {
	ID        string // public id (the first characters of the key, or "cfg-…"), for listing and revoking
	Tenant    string
	Hash      string // hex SHA-256 of the whole secret
	CreatedAt time.Time
}

// KeyStore keeps gateway keys hashed.
//
// CreateKey stores k. TenantForKey returns the tenant of the key whose hash
// is hash, or an error with code ENOTFOUND. CountKeys returns how many keys
// exist (zero keys puts the gateway in single-tenant "local" mode).
// DeleteKey removes the keys whose public ID is id and returns how many; none
// is an error with code ENOTFOUND.
type KeyStore interface {
	CreateKey(ctx context.Context, k APIKey) error
	DeleteKey(ctx context.Context, id string) (int, error)
	TenantForKey(ctx context.Context, hash string) (string, error)
	ListKeys(ctx context.Context) ([]APIKey, error)
	CountKeys(ctx context.Context) (int, error)
}

// KeyPrefix starts every gateway key.
const KeyPrefix = "gh_"

// KeyIDHexLen is how many hex digits of a key's random part its public ID
// shows: 64 bits, so IDs of distinct keys do not collide in practice (the
// remaining 128 bits stay secret). Keys created before this had 8.
const KeyIDHexLen = 16

// ConfigKeyIDPrefix starts the ID of a key declared in the configuration
// file; such a key is revoked by removing it from the file.
const ConfigKeyIDPrefix = "cfg-"

// NewAPIKey returns a fresh random secret for tenant and its storable record.
// The secret is shown once and never stored.
func NewAPIKey(tenant string, now time.Time) (secret string, k APIKey) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	secret = KeyPrefix + hex.EncodeToString(b[:])
	return secret, APIKey{ID: secret[:len(KeyPrefix)+KeyIDHexLen], Tenant: tenant, Hash: HashAPIKey(secret), CreatedAt: now.UTC()}
}

// HashAPIKey returns the stored form of a secret: hex SHA-256. Keys are 192
// random bits, so an unsalted fast hash is enough.
func HashAPIKey(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// LocalTenant is the single tenant served when no gateway keys exist.
const LocalTenant = "local"

// NewID returns a random 128-bit hex id.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// NewTimeID returns a 128-bit hex id that sorts by t: 64 bits of unix
// nanoseconds, then 64 random bits. Ledger rows use it so the store's
// primary-key index grows at its end instead of at random pages, which keeps
// group commits small.
//
// The random half comes from math/rand/v2's global source, not crypto/rand:
// one is drawn for every ledger row, on the hit path. That source is the
// runtime's per-thread ChaCha8 generator, seeded from the operating
// system's entropy at start (and never by the program), so ids stay unique
// across processes and replicas and are not predictable from earlier ones
// — enough for an id, which is no secret and no capability: the SQLite
// store names operation records with it too (they are looked up within a
// tenant, and changing one takes its fencing token). NewID, for the
// cross-replica claim tokens that do decide ownership, keeps crypto/rand.
func NewTimeID(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixNano()))
	binary.BigEndian.PutUint64(b[8:], mrand.Uint64())
	var out [32]byte
	hex.Encode(out[:], b[:])
	return string(out[:])
}

// OnceRowID is the ledger ID of a row that must be booked once however
// often it is written (a piece of an explicit cache's rent, a background
// response's usage): the row's time at in nanoseconds, as NewTimeID names
// its time, then 64 bits of the digest of tenant, key and at. The same
// row always gets the same ID and, with at as its time, writing it again
// stores nothing.
func OnceRowID(tenant, key string, at time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(at.UnixNano()))
	h := sha256.New()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(at.UTC().Format(time.RFC3339Nano)))
	copy(b[8:], h.Sum(nil)[:8])
	return hex.EncodeToString(b[:])
}
