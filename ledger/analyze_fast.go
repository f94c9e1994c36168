package ledger

import "github.com/groundhog-ai/groundhog"

// Fast paths of the line parser for what logs nearly always hold: a
// timestamp in the exact form time.RFC3339Nano writes in UTC, plain
// lowercase shape names, plain model names. Each one either gives exactly
// what the general code (analyze_line.go) would give or says no, and the
// general code then decides — errors included. They exist because the
// general code allocated and decoded for every line (a string for the
// timestamp, time.Parse, a JSON decoder for the model of a request without
// a "shape"), and a line costs a few microseconds in all.

// dayCache is fastTimestamp's memory of the last date it read: a log's
// lines are mostly of the same day as the line before, and then the date's
// digits, its validation and its day number need not be worked out again.
// The zero value is empty.
type dayCache struct {
	date [10]byte // "YYYY-MM-DD", valid
	days int64    // daysFromCivil of date
	ok   bool
}

// fastTimestamp reads a JSON string "YYYY-MM-DDTHH:MM:SS[.f…]Z" (1 to 9
// fraction digits, years 1970–2199) into unix nanoseconds, remembering its
// date. ok is false for anything else, valid or not: then parseTimestamp
// reads it.
func (dc *dayCache) fastTimestamp(v []byte) (ns int64, ok bool) {
	// "2006-01-02T15:04:05Z" is 22 bytes quoted; with 9 decimals 32.
	if len(v) < 22 || v[0] != '"' || v[len(v)-1] != '"' || v[len(v)-2] != 'Z' {
		return 0, false
	}
	s := v[1 : len(v)-2] // without the quotes and the Z
	if s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	num := func(b []byte) (int, bool) {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	var days int64
	if dc.ok && string(s[:10]) == string(dc.date[:]) {
		days = dc.days
	} else {
		year, ok1 := num(s[0:4])
		month, ok2 := num(s[5:7])
		day, ok3 := num(s[8:10])
		if !(ok1 && ok2 && ok3) || year < 1970 || year > 2199 ||
			month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
			return 0, false
		}
		days = daysFromCivil(year, month, day)
		copy(dc.date[:], s[:10])
		dc.days, dc.ok = days, true
	}
	hour, ok4 := num(s[11:13])
	minute, ok5 := num(s[14:16])
	sec, ok6 := num(s[17:19])
	if !(ok4 && ok5 && ok6) || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	var frac int
	if f := s[19:]; len(f) > 0 {
		if len(f) < 2 || len(f) > 10 || f[0] != '.' {
			return 0, false
		}
		d, ok := num(f[1:])
		if !ok {
			return 0, false
		}
		for range 10 - len(f) {
			d *= 10
		}
		frac = d
	}
	return ((days*24+int64(hour))*60+int64(minute))*60*1e9 + int64(sec)*1e9 + int64(frac), true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to the given date of
// the proleptic Gregorian calendar (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400 // y ≥ 1969 here, so no negative division
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}

// plainContent returns the content of the JSON string v when it has no
// escapes, control characters or non-ASCII bytes, without copying it.
func plainContent(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	c := v[1 : len(v)-1]
	for _, b := range c {
		if b < 0x20 || b >= 0x80 || b == '\\' || b == '"' {
			return nil, false
		}
	}
	return c, true
}

// fastShape looks a plain "shape" value up among the aliases as written
// (lowercase, no spaces: what ParseShape would make of it unchanged). ok
// is false when ParseShape must decide.
func fastShape(v []byte) (groundhog.Shape, bool) {
	c, ok := plainContent(v)
	if !ok {
		return "", false
	}
	sh, ok := shapeAliases[string(c)] // no allocation: a map index by converted bytes
	return sh, ok
}

// fastPath is shapeForPath of a plain "path" value without making a string
// that outlives the call (the conversion stays on the stack). ok is false
// when the general code must decide, errors included.
func fastPath(v []byte) (groundhog.Shape, bool) {
	c, ok := plainContent(v)
	if !ok {
		return "", false
	}
	return shapeForPath(string(c))
}

// plainDigits reads v when it is 1 to 18 ASCII digits (an integer token
// count, a duration in milliseconds) — the value strconv.ParseInt gives
// it — and says no to anything else.
func plainDigits(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
