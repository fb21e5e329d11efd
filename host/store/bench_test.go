package store_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/cputime"
	"github.com/agenthost/agenthost/host/receipt"
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

// BenchmarkReceipts appends receipts in batches of 256 (as the recorder
// writes them) and walks a chain of 100,000 stored receipts end to end
// (VerifyReceipts: a page at a time, every hash and link checked).
func BenchmarkReceipts(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("append", func(b *testing.B) {
		i := 0
		for b.Loop() {
			batch := make([]*receipt.Receipt, 256)
			for j := range batch {
				batch[j] = receiptDraft("append", i)
				i++
			}
			if err := s.AppendReceipts(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/receipt")
	})
	for i := 0; i < 100000; i += 500 {
		batch := make([]*receipt.Receipt, 500)
		for j := range batch {
			batch[j] = receiptDraft("verify", i+j)
		}
		if err := s.AppendReceipts(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("verify-100k", func(b *testing.B) {
		cpu0 := cputime.Process()
		for b.Loop() {
			rep, err := s.VerifyReceipts(ctx, "verify", nil)
			if err != nil || rep.Break != nil || rep.Receipts != 100000 {
				b.Fatal(rep, err)
			}
		}
		// The process's CPU time per walk: the figure that a busy shared
		// machine does not inflate as it does the wall time.
		b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
}
