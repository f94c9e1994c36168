package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/promptcache"
)

// promptCachePath is where serve keeps the break-diagnosis snapshot: beside
// the database, so a restart diagnoses against the prompts seen before it.
func promptCachePath(cfg *config.Config) string { return cfg.DB + ".promptcache" }

// openPromptCache returns the gateway's tracker, restored from the snapshot
// when there is one. A missing file is a first start; an unreadable one is
// logged and ignored (diagnosis starts empty, requests are unaffected).
func openPromptCache(cfg *config.Config, log *slog.Logger) *promptcache.Tracker {
	t := promptcache.NewTracker(promptcache.Config{MaxChains: cfg.PromptCache.MaxChains,
		MaxBytes: cfg.PromptCache.MaxBytes, PromptsPerChain: cfg.PromptCache.PromptsPerChain})
	p := promptCachePath(cfg)
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
		return promptcache.NewTracker(promptcache.Config{MaxChains: cfg.PromptCache.MaxChains,
			MaxBytes: cfg.PromptCache.MaxBytes, PromptsPerChain: cfg.PromptCache.PromptsPerChain})
	}
	log.Info("prompt-cache diagnosis restored", "path", p, "chains", t.Chains())
	return t
}

// savePromptCache writes t's snapshot (mode 0600: fingerprints only, but
// per tenant) through a temporary file renamed into place, so a crash
// mid-write leaves the previous snapshot.
func savePromptCache(t *promptcache.Tracker, cfg *config.Config) error {
	p := promptCachePath(cfg)
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
