package sim

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// FaultHeader is the request header that injects a fault into one model call
// (it overrides Config.Fault; "none" disables Config.Fault for the call).
const FaultHeader = "Sim-Fault"

type faultKind int

const (
	faultNone    faultKind = iota
	faultStatus            // answer with an error status, bill nothing
	faultTimeout           // never answer, bill nothing
	faultReset             // send part of the response, then abort; billed
	faultDrop              // bill the full response, then abort before sending it
)

type fault struct {
	kind   faultKind
	status int // faultStatus only
}

// CheckFault reports whether spec is a valid fault spec (for Config.Fault
// or the Sim-Fault header), so a command can reject a bad flag before New
// panics on it.
func CheckFault(spec string) error {
	_, err := parseFault(spec)
	return err
}

// parseFault parses a fault spec: "" or "none", "status=<400-599>",
// "timeout", "reset-mid-stream" or "drop-after-success".
func parseFault(spec string) (fault, error) {
	spec = strings.TrimSpace(spec)
	switch spec {
	case "", "none":
		return fault{}, nil
	case "timeout":
		return fault{kind: faultTimeout}, nil
	case "reset-mid-stream":
		return fault{kind: faultReset}, nil
	case "drop-after-success":
		return fault{kind: faultDrop}, nil
	}
	if v, ok := strings.CutPrefix(spec, "status="); ok {
		code, err := strconv.Atoi(v)
		if err != nil || code < 400 || code > 599 {
			return fault{}, groundhog.Errorf(groundhog.EINVALID, "invalid %s %q: status must be an HTTP error status 400-599", FaultHeader, spec)
		}
		return fault{kind: faultStatus, status: code}, nil
	}
	return fault{}, groundhog.Errorf(groundhog.EINVALID,
		"unknown %s %q: want status=<400-599>, timeout, reset-mid-stream, drop-after-success or none", FaultHeader, spec)
}

// faultFor returns the fault for r: its own header if present, else the
// server-wide one.
func (s *Server) faultFor(r *http.Request) (fault, error) {
	if v := r.Header.Values(FaultHeader); len(v) > 0 {
		return parseFault(v[0])
	}
	return s.fault, nil
}

// hang blocks until r's client goes away or Listen's shutdown releases it.
// It parks on channels, so a hung request costs no CPU.
func (s *Server) hang(r *http.Request) {
	if s.onHang != nil {
		s.onHang()
	}
	ctx := r.Context()
	release, _ := ctx.Value(releaseKey{}).(<-chan struct{})
	select {
	case <-ctx.Done():
	case <-release:
		// Close the connection without an answer, as a timed-out upstream
		// would look to a client that waited longer.
		panic(http.ErrAbortHandler)
	}
}

// abort ends the response by breaking the connection: whatever was flushed
// stays, the rest never arrives (a chunked body misses its terminator, a
// Content-Length body comes up short).
func abort() { panic(http.ErrAbortHandler) }
