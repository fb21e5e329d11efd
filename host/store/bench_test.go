package store_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/store"
)

// BenchmarkAppend appends a 1 KiB tool message with metadata to a
// session in SQLite (WAL, synchronous FULL): ns/op and the p50 / p99 of
// single appends.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ses, _ := s.CreateSession(ctx, "t", "p")
	content := string(make([]byte, 1024))
	meta := []byte(`{"tool_agent_output":{"tool_name":"core__echo","status":"success","result":{"a":1}}}`)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		if _, err := s.AppendMessage(ctx, "t", ses.ID, store.Message{Role: "tool", Content: content, Metadata: meta}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
