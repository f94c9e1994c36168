package metrics

import (
	"fmt"
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

var opLabelRE = regexp.MustCompile(`operation="([^"]*)"`)

// TestOperationLabelsBounded: 20,000 calls with unique
// client-chosen operation names create at most MaxObservedOperations label
// values besides the declared ones and "other"; every call is still counted.
func TestOperationLabelsBounded(t *testing.T) {
	m := New(nil)
	m.DeclareOperations("summarize", "classify")
	const n = 20_000
	for i := range n {
		m.Observe(&groundhog.LedgerEntry{Tenant: "acme", Operation: fmt.Sprintf("op-%0120d", i),
			Outcome: groundhog.OutcomeCacheHit, Saved: groundhog.Microdollar, Latency: time.Millisecond})
	}
	// Declared names keep their label even after the cap is reached.
	m.Observe(&groundhog.LedgerEntry{Tenant: "acme", Operation: "summarize", Outcome: groundhog.OutcomeUpstream})
	m.Observe(&groundhog.LedgerEntry{Tenant: "acme", Operation: "", Outcome: groundhog.OutcomeUpstream})

	out := scrape(t, m)
	ops := map[string]bool{}
	for _, mm := range opLabelRE.FindAllStringSubmatch(out, -1) {
		ops[mm[1]] = true
	}
	if max := MaxObservedOperations + 3; len(ops) > max { // + summarize, "", other
		t.Fatalf("%d distinct operation labels after %d unique names, want at most %d", len(ops), n, max)
	}
	for _, want := range []string{"summarize", "", OtherOperation, fmt.Sprintf("op-%0120d", 0)} {
		if !ops[want] {
			t.Errorf("operation label %q missing", want)
		}
	}
	if ops[fmt.Sprintf("op-%0120d", n-1)] {
		t.Error("a name past the cap has its own label")
	}
	want := fmt.Sprintf(`groundhog_calls_total{operation="other",outcome="cache_hit",tenant="acme"} %d`, n-MaxObservedOperations)
	if !strings.Contains(out, want) {
		t.Errorf("metrics lack %s", want)
	}
	// Bounded output: the series count does not grow with the names.
	if lines := strings.Count(out, "\n"); lines > 20*(MaxObservedOperations+3)+500 {
		t.Errorf("/metrics has %d lines", lines)
	}
}

// Concurrent Observe calls share the bounded label set safely.
func TestOperationLabelsConcurrent(t *testing.T) {
	m := New(nil)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 500 {
				m.Observe(&groundhog.LedgerEntry{Tenant: "t", Operation: fmt.Sprintf("g%d-%d", g, i), Outcome: groundhog.OutcomeUpstream})
			}
		}()
	}
	for range 4 {
		<-done
	}
	ops := map[string]bool{}
	for _, mm := range opLabelRE.FindAllStringSubmatch(scrape(t, m), -1) {
		ops[mm[1]] = true
	}
	if len(ops) > MaxObservedOperations+1 {
		t.Fatalf("%d operation labels, want at most %d", len(ops), MaxObservedOperations+1)
	}
}
