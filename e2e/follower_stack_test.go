package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A call that follows an identical call's flight waits as long as the
// flight runs: for the answer to begin, then, relaying a stream, for each
// next event; and the flight itself, reading the provider's stream, waits
// for each event the provider sends. Thousands may wait at once, and what
// each holds is mostly its goroutines' stacks. The runtime halves a parked
// goroutine's stack at a collection only while less than a quarter of it is
// in use, counting a guard of stackNosplit bytes below the frames: a
// goroutine that waits with 4 KB or more in use keeps a 16 KB stack for the
// whole wait, one that waits with less is halved to 8 KB. This test stops a
// real `groundhog serve` while calls wait (SIGQUIT with GOTRACEBACK=system,
// which prints every frame's stack pointer), and checks how deep each
// waits.
func TestWaitingFollowersFitInHalfTheirStack(t *testing.T) {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("the depths below are linux/amd64's: the traceback's frame layout and the runtime's guard differ elsewhere")
	}
	const (
		// stackNosplit is the runtime's guard (abi.StackNosplitBase,
		// 800 bytes on linux/amd64 without the race detector: the
		// served binary is built without it).
		stackNosplit = 800
		// aboveGoexit: the top of a goroutine's stack lies this far
		// above the frame pointer the traceback prints for goexit.
		aboveGoexit = 24
		half        = 16 << 10 / 4 // in use below this, a 16 KB stack is halved
		calls       = 6            // identical streaming calls: one flight
	)
	held := []string{"--first-token", "10m"}                                // held before its first token
	slow := []string{"--first-token", "100ms", "--per-output-token", "10m"} // the first events, then none for minutes
	// The waits: the calls' own (the flight's leader and its followers
	// answer from the same subscription), and the flight's, for the
	// provider's answer to begin (as long as the provider takes to answer
	// a call that is not streamed) and for each event of its stream.
	answering := wait{"the calls", "coalesce.(*Subscription).Next", calls - 1}
	flight := wait{"the flight reading the provider's stream", "gateway.(*exchange).readStream", 1}
	flightHead := wait{"the flight waiting for the provider's answer", "gateway.(*exchange).send", 1}
	chat := `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"one answer for all of them"}]}`
	// Gemini's route goes through the gateway's mux and its own dispatch.
	geminiPath := "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	geminiBody := `{"contents":[{"role":"user","parts":[{"text":"one answer for all of them"}]}]}`
	// A Bedrock stream's flight reads AWS eventstream messages.
	bedrockPath := "/model/anthropic.claude-3-5-haiku-20241022-v1:0/converse-stream"
	bedrockBody := `{"messages":[{"role":"user","content":[{"text":"one answer for all of them"}]}]}`
	for _, tc := range []struct {
		name       string
		sim        []string
		path, body string
		events     bool // the first events come before the calls wait
		idempotent bool // each call with an Idempotency-Key of its own
		waits      []wait
	}{
		{"for the answer to begin", held, chatPath, chat, false, false, []wait{{"the calls", "coalesce.(*Subscription).Head", calls - 1}, flightHead}},
		{"for the next event of a stream", slow, chatPath, chat, true, false, []wait{answering, flight}},
		{"for the next event, under an idempotency claim", slow, chatPath, chat, true, true, []wait{answering, flight}},
		{"for the next event of a Gemini stream", slow, geminiPath, geminiBody, true, false, []wait{answering, flight}},
		{"for the next event of a Bedrock stream", slow, bedrockPath, bedrockBody, true, false, []wait{answering, flight}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := start(t, nil, append([]string{"sim"}, tc.sim...)...)
			dir := t.TempDir()
			gw := start(t, []string{"GOTRACEBACK=system", "GROUNDHOG_GEMINI_UPSTREAM=" + sim.URL, "GROUNDHOG_BEDROCK_UPSTREAM=" + sim.URL, "GROUNDHOG_BEDROCK_API_KEY=bedrock-key"},
				"serve", "--db", dir+"/g.db", "--upstream", sim.URL+"/v1")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			firstEvent := make(chan error, calls)
			for i := 0; i < calls; i++ {
				hdr := map[string]string{"Groundhog-Cache": "use"}
				if tc.idempotent {
					hdr["Idempotency-Key"] = fmt.Sprintf("%s-call-%d", t.Name(), i)
				}
				go holdStream(ctx, http.DefaultClient, gw.URL+tc.path, tc.body, hdr, firstEvent) // until the process is stopped
			}
			// Every call is in a handler (one leads the flight, the others
			// follow it: the simulated provider is called once, below).
			waitMetric(t, gw.URL, "groundhog_in_flight_calls", calls)
			if tc.events {
				awaitFirstEvents(t, firstEvent, calls, 30*time.Second)
			}
			time.Sleep(500 * time.Millisecond) // the last to join has parked

			if err := gw.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
				t.Fatal(err)
			}
			waitExit(t, gw)
			out := gw.output()
			if n := strings.Count(out, "gateway.(*Server).upstreamCall("); n != 1 {
				t.Fatalf("%d goroutines calling the provider for %d identical calls, want 1 (the others follow its flight)", n, calls)
			}
			for _, wt := range tc.waits {
				ws := waitingIn(out, wt.in)
				if len(ws) < wt.min {
					t.Fatalf("%d goroutines waiting in %s in the traceback, want at least %d (%s):\n%.4000s", len(ws), wt.in, wt.min, wt.who, out)
				}
				if used := ws[0].depth + aboveGoexit + stackNosplit; used >= half {
					t.Errorf("%s: one waits %d bytes deep in %s: with the runtime's guard %d bytes in use, not under a quarter of a 16 KB stack, which then stays 16 KB for the whole wait instead of 8 KB. Its frames (bytes, function):%s",
						wt.who, ws[0].depth, wt.in, used, ws[0].frames)
				}
				t.Logf("%s: %d waiting in %s, %d bytes deep (an 8 KB stack needs under %d)", wt.who, len(ws), wt.in, ws[0].depth, half-aboveGoexit-stackNosplit)
			}
		})
	}
}

// waitMetric polls the gateway's /metrics until the unlabelled series
// name reaches at least want.
func waitMetric(t *testing.T, base, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if v, err := strconv.ParseFloat(metric(t, base, name), 64); err == nil && v >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not reach %v in 30s", name, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// frameRE is a frame's location line in a GOTRACEBACK=system traceback:
// its frame pointer and stack pointer.
var frameRE = regexp.MustCompile(`fp=0x([0-9a-f]+) sp=0x([0-9a-f]+)`)

// wait is where some goroutines of the gateway wait: at least min of them
// (who) under the function in.
type wait struct {
	who, in string
	min     int
}

// waiting is one goroutine of a traceback that waits in a given function.
type waiting struct {
	depth  int    // how far below its first frame (goexit) its last one (runtime.gopark) lies
	frames string // each frame's size and function, last first
}

// waitingIn returns the goroutines of the traceback that are parked
// (runtime.gopark) with fn among their frames, deepest first.
func waitingIn(traceback, fn string) []waiting {
	var ws []waiting
	for _, g := range strings.Split(traceback, "\ngoroutine ")[1:] {
		lines := strings.Split(g, "\n")
		var funcs []string
		var fps, sps []uint64
		for i := 1; i+1 < len(lines); i++ {
			m := frameRE.FindStringSubmatch(lines[i+1])
			if m == nil || strings.HasPrefix(lines[i], "\t") {
				continue
			}
			fp, _ := strconv.ParseUint(m[1], 16, 64)
			sp, _ := strconv.ParseUint(m[2], 16, 64)
			funcs, fps, sps = append(funcs, lines[i]), append(fps, fp), append(sps, sp)
		}
		if len(funcs) < 2 || !strings.HasPrefix(funcs[0], "runtime.gopark(") ||
			!strings.HasPrefix(funcs[len(funcs)-1], "runtime.goexit(") ||
			!slices.ContainsFunc(funcs, func(f string) bool { return strings.Contains(f, fn+"(") }) {
			continue
		}
		var b strings.Builder
		for i, f := range funcs {
			fmt.Fprintf(&b, "\n%6d  %s", fps[i]-sps[i], f[:strings.LastIndexByte(f, '(')])
		}
		ws = append(ws, waiting{depth: int(fps[len(fps)-1] - sps[0]), frames: b.String()})
	}
	slices.SortFunc(ws, func(a, b waiting) int { return b.depth - a.depth })
	return ws
}
