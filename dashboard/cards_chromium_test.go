package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// cardsProbePage is a test-only page: it embeds the dashboard in a
// same-origin iframe and, once the frame has loaded, measures every money
// card's number from the parent (the dashboard itself has no script) and
// writes the result into the parent's DOM, for --dump-dom to carry out.
const cardsProbePage = `<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<style>html,body{margin:0;padding:0}iframe{display:block;border:0;width:100vw;height:100vh}</style></head>
<body><pre id="result">not measured</pre>
<iframe id="dash" src="/groundhog/" onload="measure()"></iframe>
<script>
function measure() {
  var doc = document.getElementById('dash').contentDocument;
  var out = [];
  var nums = doc.querySelectorAll('.card .num');
  for (var i = 0; i < nums.length; i++) {
    var n = nums[i];
    var field = n.getAttribute('data-field') || '';
    if (!/_usd$/.test(field)) continue;
    var r = doc.createRange(); r.selectNodeContents(n);
    var lines = {}; var rects = r.getClientRects();
    for (var j = 0; j < rects.length; j++) lines[Math.round(rects[j].top)] = true;
    out.push(field + '|' + n.scrollWidth + '|' + n.clientWidth + '|' + Object.keys(lines).length + '|' + n.textContent);
  }
  out.push('frame|' + doc.documentElement.scrollWidth + '|' + doc.documentElement.clientWidth + '|1|');
  document.getElementById('result').textContent = out.join('\n');
}
</script></body></html>`

// bigMoneyRows is one day of acme's calls with nine-digit dollar figures:
// 30 distinct calls of $4,115,226.304 (spend $123,456,789.12) and a cache
// hit on each (saved $123,456,789.12, a 30-day projection of
// $3,703,703,673.60).
func bigMoneyRows(now time.Time) []groundhog.LedgerEntry {
	cost := groundhog.Money(4_115_226_304) * (groundhog.Dollar / 1000) // $4,115,226.304
	var rows []groundhog.LedgerEntry
	for i := range 60 {
		e := groundhog.LedgerEntry{
			ID: fmt.Sprintf("big-%d", i), Time: now.Add(-time.Duration(60-i) * time.Minute), Tenant: "acme", Operation: "big",
			RequestHash: fmt.Sprintf("sha256:big:%d", i%30), Shape: groundhog.ShapeChat, Model: "sim-large", Provider: "sim",
			Outcome: groundhog.OutcomeUpstream, Status: 200, Usage: groundhog.Usage{InputTokens: 1000, OutputTokens: 100},
			Cost: cost, FullCost: cost, Latency: time.Second, Attempt: 1, CacheOn: true,
		}
		if i >= 30 {
			e.Outcome, e.Cost, e.Saved = groundhog.OutcomeCacheHit, 0, cost
		}
		rows = append(rows, e)
	}
	return rows
}

// TestChromiumMoneyCardsNeverCut: with nine- and ten-digit dollar figures,
// no money card cuts its number (an element whose content is wider than
// its box has scrollWidth > clientWidth) nor breaks it over two lines, in
// a desktop window and on a phone, and the page does not scroll sideways.
func TestChromiumMoneyCardsNeverCut(t *testing.T) {
	bin := findChromium(t)
	db := openStore(t)
	fill(t, db, bigMoneyRows(testNow))
	d := New(Options{Logger: quietLog, Store: db, Auth: testAuth, Clock: fakeClock{testNow}})

	mux := http.NewServeMux()
	dash := d.Handler()
	// The frame's requests carry acme's key (Chromium sends no credentials
	// of its own for a subframe), and its answer may be framed by the
	// probe: the dashboard forbids every frame ancestor, rightly, so this
	// test-only route relaxes that to 'self' and changes nothing else.
	mux.Handle("GET /groundhog/{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+keyAcme)
		dash.ServeHTTP(&frameableWriter{ResponseWriter: w}, r)
	}))
	mux.HandleFunc("GET /probe", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, cardsProbePage)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resultRe := regexp.MustCompile(`(?s)<pre id="result">(.*?)</pre>`)
	for _, width := range []int{1280, 390} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			dom := string(runChromium(t, bin, srv.URL+"/probe", "--dump-dom",
				fmt.Sprintf("--window-size=%d,1200", width), "--hide-scrollbars", "--virtual-time-budget=5000"))
			m := resultRe.FindStringSubmatch(dom)
			if m == nil || m[1] == "not measured" {
				t.Fatalf("the probe did not run:\n%.3000s", dom)
			}
			cards, texts := 0, map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
				f := strings.SplitN(line, "|", 5)
				if len(f) != 5 {
					t.Fatalf("bad probe line %q", line)
				}
				scroll, _ := strconv.Atoi(f[1])
				client, _ := strconv.Atoi(f[2])
				if client == 0 {
					t.Errorf("%s: box of width 0", f[0])
				}
				if scroll > client {
					t.Errorf("%s at %d px: %q is cut (content %d px in a %d px box)", f[0], width, f[4], scroll, client)
				}
				// A figure broken over two lines is whole but hard to
				// read: it must stay on one line.
				if f[3] != "1" {
					t.Errorf("%s at %d px: %q is broken over %s lines", f[0], width, f[4], f[3])
				}
				if f[0] != "frame" {
					cards++
					texts[f[0]] = f[4]
				}
			}
			// The figures measured are the big ones, whole.
			for field, want := range map[string]string{
				"spend_usd": "$123456789.12", "repeat_cost_usd": "$123456789.12", "projected_30d_usd": "$3703703673.60",
			} {
				if texts[field] != want {
					t.Errorf("%s shows %q, want %q", field, texts[field], want)
				}
			}
			if cards < 3 {
				t.Fatalf("measured %d money cards, want 3", cards)
			}
		})
	}
}

// frameableWriter rewrites the Content-Security-Policy's frame-ancestors
// 'none' to 'self' as the header is written.
type frameableWriter struct {
	http.ResponseWriter
	done bool
}

func (w *frameableWriter) fix() {
	if w.done {
		return
	}
	w.done = true
	h := w.Header()
	if csp := h.Get("Content-Security-Policy"); csp != "" {
		h.Set("Content-Security-Policy", strings.Replace(csp, "frame-ancestors 'none'", "frame-ancestors 'self'", 1))
	}
}

func (w *frameableWriter) WriteHeader(code int) { w.fix(); w.ResponseWriter.WriteHeader(code) }

func (w *frameableWriter) Write(b []byte) (int, error) { w.fix(); return w.ResponseWriter.Write(b) }
