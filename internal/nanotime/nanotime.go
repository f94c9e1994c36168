// Package nanotime stores times as Unix nanoseconds, the zero time as 0:
// the column encoding both stores use for the rented caches' times.
package nanotime

import (
	"math"
	"time"
)

// Of is t in Unix nanoseconds, 0 for the zero time.
func Of(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Cursor is Of(t), except that the zero time is before every stored
// time (a page cursor that has not started).
func Cursor(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

// Time is Of's inverse, in UTC.
func Time(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
