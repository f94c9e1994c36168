package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestFingerprintLines(t *testing.T) {
	in := `{"timestamp":1,"request":{"model":"m","messages":[]}}

{"timestamp":2,"tenant":"acme","request":{"model":"m","messages":[{"role":"user","content":"hi"}]}}
`
	n, err := FingerprintLines(context.Background(), strings.NewReader(in))
	if err != nil || n != 2 {
		t.Fatalf("FingerprintLines = %d, %v; want 2 requests", n, err)
	}
	for _, bad := range []string{
		`{"timestamp":1}`,                       // no request
		`{"timestamp":1,"request":{"model":1}}`, // rejected by the fingerprint
		`{"timestamp":1,"request":[}`,           // not JSON
	} {
		_, err := FingerprintLines(context.Background(), strings.NewReader(in+bad+"\n"))
		var le *LineError
		if !errors.As(err, &le) || le.Line != 4 {
			t.Errorf("%s: err = %v, want a *LineError on line 4", bad, err)
		}
	}
}
