package receipt_test

import (
	"testing"

	"github.com/agenthost/agenthost/host/internal/cputime"
	"github.com/agenthost/agenthost/host/receipt"
)

// BenchmarkVerify100k walks a signed chain of 100,000 receipts (one
// iteration = the whole chain).
func BenchmarkVerify100k(b *testing.B) {
	rs := chain("acme", 100000)
	sigs := []*receipt.Signature{sign(b, newSigner(b), rs[len(rs)-1])}
	cpu0 := cputime.Process()
	for b.Loop() {
		rep, err := receipt.Verify("acme", receipt.Seq(rs), receipt.Seq(sigs), nil)
		if err != nil || rep.Break != nil || rep.Signed != 100000 {
			b.Fatal(rep, err)
		}
	}
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkLink is the hashing a receipt costs when it is chained.
func BenchmarkLink(b *testing.B) {
	r := draft("acme", 1)
	for b.Loop() {
		r.Link(2, r.Hash)
	}
}
