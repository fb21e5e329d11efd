package receipt

import (
	"errors"
	"fmt"
	"iter"
	"slices"
)

// Kind names what is wrong with a link of a chain.
type Kind string

// The kinds of broken links, in the words `agenthost receipts verify`
// prints.
const (
	// Edited: a receipt's content does not match its own hash, or a
	// stored payload (arguments, inputs) does not match its digest.
	Edited Kind = "edited"
	// Reordered: a receipt comes out of sequence order.
	Reordered Kind = "reordered"
	// Gap: receipts are missing before this one.
	Gap Kind = "gap"
	// Forged: a receipt does not name the previous receipt's hash, or
	// a valid signature vouches for another hash at this seq (the chain
	// was rewritten after it was signed).
	Forged Kind = "forged"
	// Truncated: a valid signature covers receipts the chain no longer
	// holds.
	Truncated Kind = "truncated"
	// BadSignature: a signature record does not verify (wrong message,
	// namespace or key, or not a signature at all).
	BadSignature Kind = "bad signature"
	// Malformed: a record cannot be read as a receipt or a signature.
	Malformed Kind = "malformed"
)

// Break is the first bad link of a chain.
type Break struct {
	Tenant string `json:"tenant"`
	Seq    uint64 `json:"seq"`
	Kind   Kind   `json:"kind"`
	Detail string `json:"detail"`
}

func (b *Break) Error() string {
	return fmt.Sprintf("tenant %q: receipt %d: %s: %s", b.Tenant, b.Seq, b.Kind, b.Detail)
}

// Report is the outcome of verifying one tenant's chain.
type Report struct {
	Tenant string `json:"tenant"`
	// Receipts counts the receipts walked (up to the break, if any).
	Receipts uint64 `json:"receipts"`
	// Head is the hash of the last good receipt.
	Head string `json:"head,omitempty"`
	// Signed is the highest seq a good signature covers (0: unsigned).
	Signed uint64 `json:"signed"`
	// Signatures counts the good signatures; Signers names their keys.
	Signatures int      `json:"signatures"`
	Signers    []string `json:"signers,omitempty"`
	// Break is the first bad link; nil when the chain is whole.
	Break *Break `json:"break,omitempty"`
}

// Verifier walks one tenant's chain, one receipt at a time, in the order
// the chain is stored, keeping only the previous link: memory does not
// grow with the chain. Signatures are given in seq order, each before the
// receipt after the seq it covers ([Verify] merges the two streams).
type Verifier struct {
	trust Trust
	rep   Report
	next  uint64 // the seq expected next
	prev  string // the hash of receipt next-1
	// sigs wait for the receipt they cover (seq >= next); bounded by
	// maxPending.
	pending []*Signature
}

// maxPending caps the signatures waiting for receipts ahead of the walk.
const maxPending = 1024

// NewVerifier starts the walk of tenant's chain.
func NewVerifier(tenant string, trust Trust) *Verifier {
	return &Verifier{trust: trust, rep: Report{Tenant: tenant}, next: 1}
}

func (v *Verifier) fail(seq uint64, kind Kind, format string, args ...any) *Break {
	v.rep.Break = &Break{Tenant: v.rep.Tenant, Seq: seq, Kind: kind, Detail: fmt.Sprintf(format, args...)}
	return v.rep.Break
}

// Signature takes the next signature record of the tenant. A signature
// that does not verify is a break at its seq.
func (v *Verifier) Signature(s *Signature) *Break {
	if v.rep.Break != nil {
		return v.rep.Break
	}
	if s.Tenant != v.rep.Tenant {
		return v.fail(s.Seq, BadSignature, "a signature of tenant %q is among tenant %q's", s.Tenant, v.rep.Tenant)
	}
	who, err := s.Check(v.trust)
	if err != nil {
		return v.fail(s.Seq, BadSignature, "%v", err)
	}
	if s.Seq < v.next {
		return v.fail(s.Seq, BadSignature, "a signature of receipt %d comes after receipt %d was walked (signatures must be in seq order)", s.Seq, v.next-1)
	}
	if len(v.pending) >= maxPending {
		return v.fail(s.Seq, BadSignature, "more than %d signatures ahead of the receipts", maxPending)
	}
	if !slices.Contains(v.rep.Signers, who) {
		v.rep.Signers = append(v.rep.Signers, who)
	}
	v.pending = append(v.pending, s)
	return nil
}

// Receipt takes the next receipt of the chain; peek is the one after it
// (nil at the end), used only to tell a reordering from a gap. It returns
// the break the receipt makes, if any.
func (v *Verifier) Receipt(r, peek *Receipt) *Break {
	if v.rep.Break != nil {
		return v.rep.Break
	}
	if r.Tenant != v.rep.Tenant {
		return v.fail(v.next, Edited, "a receipt of tenant %q (seq %d) is in tenant %q's chain", r.Tenant, r.Seq, v.rep.Tenant)
	}
	if err := r.Check(); err != nil {
		return v.fail(v.next, Malformed, "%v", err)
	}
	if got := r.Sum(); got != r.Hash {
		return v.fail(r.Seq, Edited, "its content hashes to %s, not to its hash %s", got, r.Hash)
	}
	if r.Args != nil && Digest(r.Args) != r.ArgsDigest {
		return v.fail(r.Seq, Edited, "the stored arguments do not match the receipt's argsDigest")
	}
	if r.Inputs != nil && Digest(r.Inputs) != r.InputsDigest {
		return v.fail(r.Seq, Edited, "the stored inputs do not match the receipt's inputsDigest")
	}
	switch {
	case r.Seq < v.next:
		return v.fail(r.Seq, Reordered, "receipt %d comes after receipt %d", r.Seq, v.next-1)
	case r.Seq > v.next && peek != nil && peek.Seq < r.Seq:
		return v.fail(v.next, Reordered, "receipt %d comes where receipt %d belongs", r.Seq, v.next)
	case r.Seq > v.next:
		return v.fail(v.next, Gap, "receipts %d to %d are missing (the next one is %d)", v.next, r.Seq-1, r.Seq)
	}
	if r.Prev != v.prev {
		return v.fail(r.Seq, Forged, "its prev %s is not the hash of receipt %d (%s)", short(r.Prev), r.Seq-1, short(v.prev))
	}
	// The signatures of this receipt.
	keep := v.pending[:0]
	for _, s := range v.pending {
		switch {
		case s.Seq > r.Seq:
			keep = append(keep, s)
		case s.Hash != r.Hash:
			return v.fail(r.Seq, Forged, "a valid signature made at %d vouches for the hash %s here, the chain has %s: it was rewritten after it was signed", s.At, short(s.Hash), short(r.Hash))
		default:
			v.rep.Signatures++
			v.rep.Signed = max(v.rep.Signed, s.Seq)
		}
	}
	v.pending = keep
	v.rep.Receipts++
	v.prev, v.rep.Head = r.Hash, r.Hash
	v.next = r.Seq + 1
	return nil
}

// Done ends the walk: a valid signature of a receipt past the end means
// the chain was cut short.
func (v *Verifier) Done() Report {
	if v.rep.Break == nil && len(v.pending) > 0 {
		s := v.pending[0]
		v.fail(v.next, Truncated, "a valid signature made at %d covers receipt %d; the chain ends at %d", s.At, s.Seq, v.next-1)
	}
	return v.rep
}

// Verify walks one tenant's chain from receipts (in stored order) and its
// signatures (in seq order), and reports the first bad link. The error is
// a failure to read the streams, not a bad chain. Memory stays bounded
// whatever the chain's length.
func Verify(tenant string, receipts iter.Seq2[*Receipt, error], sigs iter.Seq2[*Signature, error], trust Trust) (Report, error) {
	v := NewVerifier(tenant, trust)
	rep, err := v.walk(receipts, sigs)
	var de *DecodeError
	if errors.As(err, &de) {
		v.fail(de.Seq, Malformed, "%v", de.Err)
		return v.rep, nil
	}
	return rep, err
}

func (v *Verifier) walk(receipts iter.Seq2[*Receipt, error], sigs iter.Seq2[*Signature, error]) (Report, error) {
	nextSig, stopSig := iter.Pull2(sigs)
	defer stopSig()
	sig, serr, sok := nextSig()
	nextR, stopR := iter.Pull2(receipts)
	defer stopR()
	r, rerr, rok := nextR()
	for rok {
		if rerr != nil {
			return v.rep, rerr
		}
		peek, perr, pok := nextR()
		if pok && perr != nil {
			return v.rep, perr
		}
		if !pok {
			peek = nil
		}
		// Signatures of heads up to this receipt's seq come first.
		for sok && (serr != nil || sig.Seq <= r.Seq) {
			if serr != nil {
				return v.rep, serr
			}
			if b := v.Signature(sig); b != nil {
				return v.rep, nil
			}
			sig, serr, sok = nextSig()
		}
		if b := v.Receipt(r, peek); b != nil {
			return v.rep, nil
		}
		r, rerr, rok = peek, perr, pok
	}
	for sok {
		if serr != nil {
			return v.rep, serr
		}
		if b := v.Signature(sig); b != nil {
			return v.rep, nil
		}
		sig, serr, sok = nextSig()
	}
	return v.Done(), nil
}

func short(h string) string {
	if h == "" {
		return `""`
	}
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

// DecodeError is a stored record that cannot be read as a receipt or a
// signature. A stream that yields one makes [Verify] report a Malformed
// link at Seq instead of failing.
type DecodeError struct {
	Seq uint64
	Err error
}

func (e *DecodeError) Error() string { return fmt.Sprintf("record %d: %v", e.Seq, e.Err) }

func (e *DecodeError) Unwrap() error { return e.Err }
