package receipt

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Signature is a signature of a chain head: the operator's SSH key
// vouches that the tenant's chain had, at receipt Seq, the hash Hash.
// Everything up to Seq is then covered: a receipt edited, removed or
// inserted before it, or the chain cut short before it, no longer
// matches.
type Signature struct {
	Tenant string `json:"tenant"`
	Seq    uint64 `json:"seq"`
	Hash   string `json:"hash"`
	// At is when the head was signed, in Unix nanoseconds (UTC).
	At int64 `json:"at"`
	// Signature is the armored SSH signature (-----BEGIN SSH
	// SIGNATURE-----) of [Signature.Message] in the namespace
	// agenthost-receipts.
	Signature string `json:"signature"`
}

// Message returns the bytes that are signed: the lines
// "agenthost-receipts 1", "tenant N:TENANT", "seq SEQ", "hash HASH" and
// "at NS", each ending in a newline. They are rebuilt from the record's
// fields, so a signature moved to another head no longer verifies.
func (s *Signature) Message() []byte {
	b := make([]byte, 0, 160+len(s.Tenant))
	b = append(b, "agenthost-receipts "...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, '\n')
	b = text(b, "tenant", s.Tenant)
	b = append(b, "seq "...)
	b = strconv.AppendUint(b, s.Seq, 10)
	b = append(b, '\n')
	b = text(b, "hash", s.Hash)
	b = append(b, "at "...)
	b = strconv.AppendInt(b, s.At, 10)
	return append(b, '\n')
}

// Sign signs the head (tenant, seq, hash) at the time at (Unix ns) with
// signer.
func Sign(signer ssh.Signer, tenant string, seq uint64, hash string, at int64) (*Signature, error) {
	s := &Signature{Tenant: tenant, Seq: seq, Hash: hash, At: at}
	sig, err := sshsig.Sign(bytes.NewReader(s.Message()), signer, sshsig.HashSHA512, Namespace)
	if err != nil {
		return nil, fmt.Errorf("receipt: sign: %w", err)
	}
	s.Signature = string(sshsig.Armor(sig))
	return s, nil
}

// Trust decides whether a key that made a valid signature may vouch for
// receipts, and names it (a principal of an allowed-signers file). A nil
// Trust takes any key and names it by its fingerprint: the signature then
// proves the chain was not changed since a holder of that key signed it,
// not who that was.
type Trust func(key ssh.PublicKey) (principal string, err error)

// Check verifies s: its signature is an SSH signature in the receipts
// namespace over its own message, by a key trust accepts. It returns the
// signer's name.
func (s *Signature) Check(trust Trust) (string, error) {
	if len(s.Signature) > 64<<10 {
		return "", errors.New("the signature is larger than 64 KiB")
	}
	sig, err := sshsig.Unarmor([]byte(s.Signature))
	if err != nil {
		return "", fmt.Errorf("not an SSH signature: %v", err)
	}
	if sig.Namespace != Namespace {
		return "", fmt.Errorf("the signature is for the namespace %q, not %q", sig.Namespace, Namespace)
	}
	if err := sshsig.Verify(bytes.NewReader(s.Message()), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return "", fmt.Errorf("it does not sign this head (tenant %q, seq %d, hash %s): %v", s.Tenant, s.Seq, s.Hash, err)
	}
	if trust == nil {
		return ssh.FingerprintSHA256(sig.PublicKey), nil
	}
	who, err := trust(sig.PublicKey)
	if err != nil {
		return "", fmt.Errorf("untrusted key %s: %v", ssh.FingerprintSHA256(sig.PublicKey), err)
	}
	return who, nil
}

// ParseMessage reads a signed message ([Signature.Message]) back into the
// head it names (Signature left empty), from untrusted bytes: the fields
// must be in order, each text of exactly its stated length, nothing after.
func ParseMessage(b []byte) (*Signature, error) {
	p := parser{b: b}
	v := p.int("agenthost-receipts")
	if p.err == nil && v != Version {
		return nil, fmt.Errorf("receipt signature: version %d; this agenthost reads %d", v, Version)
	}
	s := &Signature{}
	s.Tenant = p.text("tenant")
	s.Seq = p.uint("seq")
	s.Hash = p.text("hash")
	s.At = p.int("at")
	if p.err == nil && len(p.b) > 0 {
		p.err = errors.New("bytes after the last field")
	}
	if p.err != nil {
		return nil, fmt.Errorf("receipt signature: %w", p.err)
	}
	return s, nil
}
