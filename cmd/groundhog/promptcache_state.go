package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/promptcache"
)

// promptCachePath is where serve keeps the break-diagnosis snapshot, so a
// restart diagnoses against the prompts seen before it: beside a SQLite
// file; for PostgreSQL, beside the replica's ledger journal (journal), one
// per replica like the journal — never a name made from the database URL,
// which is not a path and may hold a password.
func promptCachePath(cfg *config.Config, journal string) string {
	if !isPostgresURL(cfg.DB) {
		return cfg.DB + ".promptcache"
	}
	return strings.TrimSuffix(filepath.Clean(journal), ".journal") + ".promptcache"
}

// openPromptCache returns the gateway's tracker, restored from the snapshot
// when there is one. A missing file is a first start; an unreadable one is
// logged and ignored (diagnosis starts empty, requests are unaffected).
func openPromptCache(cfg *config.Config, journal string, log *slog.Logger) *promptcache.Tracker {
	t := promptcache.NewTracker(gateway.TrackerConfig(cfg.PromptCache))
	p := promptCachePath(cfg, journal)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return t
	}
	if err != nil {
		log.Warn("prompt-cache snapshot unreadable; diagnosis starts empty", "path", p, "err", err)
		return t
	}
	defer f.Close()
	if err := t.Restore(f); err != nil {
		log.Warn("prompt-cache snapshot unreadable; diagnosis starts empty", "path", p, "err", err)
		return promptcache.NewTracker(gateway.TrackerConfig(cfg.PromptCache))
	}
	log.Info("prompt-cache diagnosis restored", "path", p, "chains", t.Chains())
	return t
}

// savePromptCache writes t's snapshot (mode 0600: fingerprints only, but
// per tenant) through a temporary file renamed into place, so a crash
// mid-write leaves the previous snapshot.
func savePromptCache(t *promptcache.Tracker, cfg *config.Config, journal string) error {
	p := promptCachePath(cfg, journal)
	tmp, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".tmp*")
	if err != nil {
		return fmt.Errorf("prompt-cache snapshot: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("prompt-cache snapshot: %w", err)
	}
	if err := t.Snapshot(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("prompt-cache snapshot: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("prompt-cache snapshot: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("prompt-cache snapshot: %w", err)
	}
	return nil
}
