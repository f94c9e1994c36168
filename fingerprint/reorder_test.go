package fingerprint_test

import (
	"strings"
	"testing"
)

// reorderBodies are objects in the disorders the scanner fixes in place
// (moveFirst: a short first member that sorts later; moveLast: the last
// member sorting first) and the near misses that must take the general
// path: duplicates in every position, dropped members, a first member too
// long, a span after the last member too long, more than 16 members,
// escaped keys; and strings with escapes to rewrite (\/, \u, surrogate
// pairs) next to canonical ones, for the string index.
var reorderBodies = []string{
	`{"role":"user","content":"hi"}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
	`{"role":"tool","content":"x","tool_call_id":"c1"}`,
	`{"b":1,"a":2,"c":3,"d":4}`,
	`{"c":1,"a":2,"b":3,"d":4}`,
	`{"d":1,"a":2,"b":3,"c":4}`,
	`{"a":1,"b":2,"c":3,"0":4}`,
	`{"a":1,"c":2,"d":3,"b":4}`,
	// One pair out of order, not the first and not at the end: neither
	// moveFirst nor moveLast may take it.
	`{"a":1,"d":2,"b":3,"c":4}`,
	`{"a":1,"b":2,"e":3,"c":4,"d":5}`,
	`{"b":1,"a":2,"b":3}`,
	`{"b":1,"a":2,"c":3,"b":4}`,
	`{"a":1,"b":2,"a":3}`,
	`{"a":1,"c":2,"c":3,"b":0}`,
	`{"b":1,"a":2,"a":3}`,
	`{"b":1,"user":"u","a":2}`,
	`{"user":"u","b":1,"a":2}`,
	`{"b":1,"a":2,"stream":true}`,
	`{"stream":true,"a":1,"b":2}`,
	`{"a":1,"b":2,"user":"u","0":3}`,
	`{"` + strings.Repeat("z", 40) + `":1,"a":2}`,
	`{"a":1,"b":"` + strings.Repeat("y", 70) + `","0":3}`,
	`{"b\u0061":1,"a":2}`,
	`{"\u0062":1,"a":2,"b":3}`,
	`{"é":1,"e":2}`,
	`{"😀":1,"":2,"\uffff":3}`,
	`{"q":1,"p":2,"o":3,"n":4,"m":5,"l":6,"k":7,"j":8,"i":9,"h":10,"g":11,"f":12,"e":13,"d":14,"c":15,"b":16,"a":17}`,
	`{"r":1,"a":2,"b":3,"c":4,"d":5,"e":6,"f":7,"g":8,"h":9,"i":10,"j":11,"k":12,"l":13,"m":14,"n":15,"o":16,"p":17}`,
	`{"s":"a\/b\u00e9\ud83d\ude00 \" \\ \n","a":"\u0000\u001f\u007f"}`,
	`{"s":"\ud83d","a":1}`,
	`{"s":"\x","a":1}`,
	`{"s":"` + "\x01" + `","a":1}`,
	`{"s":"\u12","a":1}`,
	`{"s":"abc\`,
	`{"b":[{"y":1,"x":2},{"x":1,"y":2}],"a":{"d":{"f":1,"e":2},"c":3}}`,
	`{ "b" : 1 , "a" : 2 }`,
	`{"b":1 ,"a":2}`,
	`{"b":1,"a"  :2}`,
}

// TestReorderMatchesOld: every reorderBodies entry, as it is and inside a
// request long enough for the assembly and the string index (Compute uses
// them from 512 bytes), against the old scanner.
func TestReorderMatchesOld(t *testing.T) {
	pad := strings.Repeat("pad \\\" text ", 60)
	for _, b := range reorderBodies {
		checkSame(t, "acme", []byte(b))
		long := `{"model":"m","messages":[{"role":"user","content":"` + pad + `"},` + b + `,{"k":` + b + `}],"z":` + b + `}`
		checkSame(t, "acme", []byte(long))
	}
}
