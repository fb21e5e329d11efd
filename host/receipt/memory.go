package receipt

import (
	"context"
	"fmt"
	"iter"
	"sync"
)

// Memory is a [Store] in memory, for tests and for programs that keep
// their receipts only while they run. It holds at most max receipts in
// all; an append past that fails (the receipts are then lost and counted
// by the Recorder), it never grows without bound.
type Memory struct {
	mu      sync.Mutex
	max     int
	n       int
	chains  map[string][]*Receipt
	sigs    map[string][]*Signature
	maxSigs int
	nSigs   int
}

// NewMemory returns an empty Memory holding at most max receipts and as
// many signatures.
func NewMemory(max int) *Memory {
	return &Memory{max: max, maxSigs: max, chains: map[string][]*Receipt{}, sigs: map[string][]*Signature{}}
}

// AppendReceipts links rs into their chains, all or none.
func (m *Memory) AppendReceipts(_ context.Context, rs []*Receipt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n+len(rs) > m.max {
		return fmt.Errorf("receipt: the memory store holds at most %d receipts", m.max)
	}
	for _, r := range rs {
		c := m.chains[r.Tenant]
		prev := ""
		if len(c) > 0 {
			prev = c[len(c)-1].Hash
		}
		r.Link(uint64(len(c))+1, prev)
		m.chains[r.Tenant] = append(c, r)
	}
	m.n += len(rs)
	return nil
}

// AddReceiptSignature keeps s.
func (m *Memory) AddReceiptSignature(_ context.Context, s *Signature) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nSigs >= m.maxSigs {
		return fmt.Errorf("receipt: the memory store holds at most %d signatures", m.maxSigs)
	}
	m.sigs[s.Tenant] = append(m.sigs[s.Tenant], s)
	m.nSigs++
	return nil
}

// Receipts walks tenant's chain.
func (m *Memory) Receipts(tenant string) iter.Seq2[*Receipt, error] {
	m.mu.Lock()
	c := m.chains[tenant]
	m.mu.Unlock()
	return Seq(c)
}

// Signatures walks tenant's head signatures in seq order.
func (m *Memory) Signatures(tenant string) iter.Seq2[*Signature, error] {
	m.mu.Lock()
	s := m.sigs[tenant]
	m.mu.Unlock()
	return Seq(s)
}

// Seq turns a slice into the stream [Verify] reads.
func Seq[T any](s []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, v := range s {
			if !yield(v, nil) {
				return
			}
		}
	}
}
