package ledger

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSegmentLifecycle measures a journal segment's life per row:
// create + map + copy rows + seal + remove, for rows rows of 280 bytes.
func BenchmarkSegmentLifecycle(b *testing.B) {
	for _, rows := range []int{2048, 8192, 32768} {
		b.Run(itoa(rows), func(b *testing.B) {
			dir := b.TempDir()
			rec := make([]byte, 280)
			rec[0] = 1
			var seq uint64
			prev := int64(0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				seq++
				f, err := createSegment(dir, seq)
				if err != nil {
					b.Fatal(err)
				}
				seg := &segment{seq: seq, f: f, size: int64(len(segMagic))}
				seg.m = mapNewSegment(f, rows, prev)
				for r := 0; r < rows; r++ {
					if err := seg.writeRecords(rec); err != nil {
						b.Fatal(err)
					}
				}
				prev = seg.size
				if err := seg.sealFile(); err != nil {
					b.Fatal(err)
				}
				os.Remove(filepath.Join(dir, segmentName(seq)))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
	}
}

func itoa(n int) string {
	b := []byte{}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func BenchmarkSegmentRecycled(b *testing.B) {
	rows := 2048
	dir := b.TempDir()
	rec := make([]byte, 280)
	rec[0] = 1
	f, err := createSegment(dir, 1)
	if err != nil {
		b.Fatal(err)
	}
	seg := &segment{seq: 1, f: f, size: int64(len(segMagic))}
	seg.m = mapNewSegment(f, rows, 0)
	seq := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rows; r++ {
			if err := seg.writeRecords(rec); err != nil {
				b.Fatal(err)
			}
		}
		clear(seg.m[len(segMagic):seg.size])
		seg.size = int64(len(segMagic))
		seq++
		if err := os.Rename(filepath.Join(dir, segmentName(seq-1)), filepath.Join(dir, segmentName(seq))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
