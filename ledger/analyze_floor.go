package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// FingerprintLines is the floor of Analyze, for benchmarks: it reads r as
// Analyze does — the same chunks of whole lines, parsed on the same
// GOMAXPROCS workers, consumed in input order — but on each line it only
// finds the "request" member and fingerprints it (as a chat request, with
// the line's "tenant"), which every line of Analyze must do too. Nothing
// else of a line is read, and nothing is ordered or counted. It returns
// the number of requests fingerprinted; a line without a request, or one
// the fingerprint rejects, stops it with a *LineError.
//
// Analyze ÷ FingerprintLines is how close Analyze is to its own floor; bare
// line reading, which the issue's goal compares with, does no fingerprint.
func FingerprintLines(ctx context.Context, r io.Reader) (int64, error) {
	workers := max(1, runtime.GOMAXPROCS(0))
	quit := make(chan struct{})
	work := make(chan *chunk, workers)
	ordered := make(chan *chunk, workers+1)
	free := make(chan *chunk, workers+3)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		readChunks(r, quit, work, ordered, free)
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &parser{intern: map[string]string{}}
			for c := range work {
				p.fingerprintChunk(c)
				close(c.done)
			}
		}()
	}
	n, err := collectFloor(ctx, ordered, free)
	close(quit)
	for range ordered {
	}
	wg.Wait()
	return n, err
}

func collectFloor(ctx context.Context, ordered <-chan *chunk, free chan<- *chunk) (int64, error) {
	var n int64
	for c := range ordered {
		select {
		case <-c.done:
		case <-ctx.Done():
			return n, ctx.Err()
		}
		for _, res := range c.results {
			if res.err != nil {
				return n, &LineError{Line: res.line, Err: res.err}
			}
			n++
		}
		if c.err != nil {
			return n, c.err
		}
		recycle(c, free)
	}
	return n, nil
}

// fingerprintChunk fingerprints the request of every non-blank line of c.
func (p *parser) fingerprintChunk(c *chunk) {
	data, line := c.data, c.firstLine
	for len(data) > 0 {
		b := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			b, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if b = bytes.TrimSpace(b); len(b) > 0 {
			c.results = append(c.results, lineResult{line: line, err: p.fingerprintLine(b)})
		}
		line++
	}
}

// fingerprintLine is the part of parse that no line can skip, done the
// same way: the line's members found by scanObject, the tenant read
// through the worker's intern table, the request fingerprinted.
func (p *parser) fingerprintLine(b []byte) error {
	var req, tenant []byte
	if err := scanObject(b, func(key, val []byte) error {
		switch string(key) {
		case "request":
			req = val
		case "tenant":
			tenant = val
		}
		return nil
	}); err != nil {
		return err
	}
	if req == nil {
		return errors.New(`missing "request"`)
	}
	t, err := p.optString("tenant", tenant)
	if err != nil {
		return err
	}
	if t == "" {
		t = groundhog.LocalTenant
	}
	if _, err := fingerprint.Compute(fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: t}, req); err != nil {
		return fmt.Errorf("request: %s", groundhog.ErrorMessage(err))
	}
	return nil
}
