//go:build !linux

package ledger

import (
	"errors"
	"os"
)

// mapSegment is not implemented here: segments are written with pwrite(2).
func mapSegment(*os.File, int, int) ([]byte, error) { return nil, errors.ErrUnsupported }

func growSegment(*os.File, []byte, int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapSegment([]byte) error { return nil }
