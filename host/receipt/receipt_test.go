package receipt_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/agenthost/agenthost/host/receipt"
)

// newSigner makes an ed25519 SSH signer.
func newSigner(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// draft is the receipt of call i as the host builds it (unlinked).
func draft(tenant string, i int) *receipt.Receipt {
	fuel := uint64(1000 + i)
	args := []byte(fmt.Sprintf(`{"n":%d}`, i))
	return &receipt.Receipt{
		V: receipt.Version, Tenant: tenant, CallID: fmt.Sprintf("%016x", i), Tool: "core:echo", ToolVersion: "1.0.0",
		Runner: "wasm:wasi-command", Module: receipt.Digest([]byte("module")), Grant: receipt.Digest([]byte("grant")),
		ArgsDigest: receipt.Digest(args), OutputDigest: receipt.Digest(args), Fuel: &fuel,
		Start: int64(i) * 1000, End: int64(i)*1000 + 500, Status: "success", Args: args,
	}
}

// chain builds a linked chain of n receipts of tenant.
func chain(tenant string, n int) []*receipt.Receipt {
	out := make([]*receipt.Receipt, n)
	prev := ""
	for i := range out {
		r := draft(tenant, i)
		r.Link(uint64(i+1), prev)
		prev = r.Hash
		out[i] = r
	}
	return out
}

func sign(t testing.TB, s ssh.Signer, r *receipt.Receipt) *receipt.Signature {
	t.Helper()
	sig, err := receipt.Sign(s, r.Tenant, r.Seq, r.Hash, r.End)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// clone copies a receipt (pointers to fresh values), so a case may tamper
// with it.
func clone(rs []*receipt.Receipt) []*receipt.Receipt {
	out := make([]*receipt.Receipt, len(rs))
	for i, r := range rs {
		c := *r
		out[i] = &c
	}
	return out
}

// TestTampering builds a signed chain of 10,000 receipts and checks that
// each kind of tampering is named at its first bad link.
func TestTampering(t *testing.T) {
	const n = 10000
	key, other := newSigner(t), newSigner(t)
	base := chain("acme", n)
	baseSigs := []*receipt.Signature{sign(t, key, base[4999]), sign(t, key, base[n-1])}
	trusted := func(k ssh.PublicKey) (string, error) {
		if bytes.Equal(k.Marshal(), key.PublicKey().Marshal()) {
			return "operator", nil
		}
		return "", errors.New("not in the allowed signers")
	}
	cases := []struct {
		name   string
		tamper func(rs []*receipt.Receipt, sigs []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature)
		kind   receipt.Kind // "" = whole
		seq    uint64
	}{
		{"whole", nil, "", 0},
		{"edited status", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			rs[4999].Status = "failure"
			return rs, s
		}, receipt.Edited, 5000},
		{"edited arguments", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			rs[99].Args = []byte(`{"n":-1}`)
			return rs, s
		}, receipt.Edited, 100},
		{"edited inputs", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			rs[9].Inputs = []byte(`{"clock":[1]}`)
			return rs, s
		}, receipt.Edited, 10},
		{"reordered", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			rs[200], rs[201] = rs[201], rs[200]
			return rs, s
		}, receipt.Reordered, 201},
		// A receipt moved far ahead leaves a gap where it was: the walk
		// keeps one receipt of look-ahead, not the chain.
		{"moved ahead", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			r := rs[10]
			rs = slices.Delete(rs, 10, 11)
			return slices.Insert(rs, 700, r), s
		}, receipt.Gap, 11},
		{"moved back", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			r := rs[700]
			rs = slices.Delete(rs, 700, 701)
			return slices.Insert(rs, 10, r), s
		}, receipt.Reordered, 11},
		{"gap", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			return slices.Delete(rs, 300, 301), s
		}, receipt.Gap, 301},
		{"forged: wrong prev", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			f := draft("acme", 99999)
			f.Link(401, receipt.Digest([]byte("made up")))
			rs[400] = f
			return rs, s
		}, receipt.Forged, 401},
		{"forged: replaced and linked", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			f := draft("acme", 99999)
			f.Link(401, rs[399].Hash)
			rs[400] = f
			return rs, s
		}, receipt.Forged, 402},
		{"forged: rewritten after signing", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			rs[600].Status = "failure"
			for i := 600; i < len(rs); i++ {
				rs[i].Link(rs[i].Seq, rs[i-1].Hash)
			}
			return rs, s
		}, receipt.Forged, 5000},
		{"truncated", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			return rs[:n-10], s
		}, receipt.Truncated, n - 9},
		{"signature swapped", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			s[0].Signature, s[1].Signature = s[1].Signature, s[0].Signature
			return rs, s
		}, receipt.BadSignature, 5000},
		{"signature moved to another head", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			s[0].Seq, s[0].Hash = 4000, rs[3999].Hash
			return rs, s
		}, receipt.BadSignature, 4000},
		{"signed by an untrusted key", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			s[0] = sign(t, other, rs[4999])
			return rs, s
		}, receipt.BadSignature, 5000},
		{"not a signature", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			s[1].Signature = "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n"
			return rs, s
		}, receipt.BadSignature, n},
		{"another tenant's receipt", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			rs[50] = chain("beta", 51)[50]
			return rs, s
		}, receipt.Edited, 51},
		{"unsigned tail", func(rs []*receipt.Receipt, s []*receipt.Signature) ([]*receipt.Receipt, []*receipt.Signature) {
			return rs, s[:1]
		}, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := clone(base)
			sigs := []*receipt.Signature{new(receipt.Signature), new(receipt.Signature)}
			*sigs[0], *sigs[1] = *baseSigs[0], *baseSigs[1]
			if tc.tamper != nil {
				rs, sigs = tc.tamper(rs, sigs)
			}
			rep, err := receipt.Verify("acme", receipt.Seq(rs), receipt.Seq(sigs), trusted)
			if err != nil {
				t.Fatal(err)
			}
			if tc.kind == "" {
				if rep.Break != nil {
					t.Fatalf("a whole chain breaks: %v", rep.Break)
				}
				if rep.Receipts != n || rep.Head != base[n-1].Hash || rep.Signed != sigs[len(sigs)-1].Seq || rep.Signatures != len(sigs) || !slices.Equal(rep.Signers, []string{"operator"}) {
					t.Fatalf("report: %+v", rep)
				}
				return
			}
			if rep.Break == nil || rep.Break.Kind != tc.kind || rep.Break.Seq != tc.seq {
				t.Fatalf("want %s at %d, got %+v", tc.kind, tc.seq, rep.Break)
			}
		})
	}
}

// TestUnsignedAndMalformed: a chain without signatures verifies (its
// hashes) and says so; a record that is not a receipt is a malformed
// link; a failing stream is an error, not a break.
func TestUnsignedAndMalformed(t *testing.T) {
	rs := chain("acme", 20)
	rep, err := receipt.Verify("acme", receipt.Seq(rs), receipt.Seq[*receipt.Signature](nil), nil)
	if err != nil || rep.Break != nil || rep.Signed != 0 || rep.Receipts != 20 {
		t.Fatalf("unsigned: %+v %v", rep, err)
	}
	bad := func(yield func(*receipt.Receipt, error) bool) {
		for _, r := range rs[:5] {
			if !yield(r, nil) {
				return
			}
		}
		yield(nil, &receipt.DecodeError{Seq: 6, Err: errors.New("not JSON")})
	}
	rep, err = receipt.Verify("acme", bad, receipt.Seq[*receipt.Signature](nil), nil)
	if err != nil || rep.Break == nil || rep.Break.Kind != receipt.Malformed || rep.Break.Seq != 6 {
		t.Fatalf("malformed: %+v %v", rep, err)
	}
	failing := iter.Seq2[*receipt.Receipt, error](func(yield func(*receipt.Receipt, error) bool) { yield(nil, errors.New("disk on fire")) })
	if _, err := receipt.Verify("acme", failing, receipt.Seq[*receipt.Signature](nil), nil); err == nil {
		t.Fatal("a failing stream verified")
	}
}

// TestEncodingGolden pins the canonical encoding and hash of a receipt
// (testdata/receipt.txt): a change to the encoding breaks every stored
// chain, so it must be a new version.
func TestEncodingGolden(t *testing.T) {
	r := draft("acme", 7)
	r.Approval = &receipt.Approval{ID: "ap-1", Decision: "allow-once", Tenant: "acme", Subject: "alice", At: 42}
	r.Inputs = []byte(`{"clock":[1,2]}`)
	r.InputsDigest = receipt.Digest(r.Inputs)
	r.Link(8, receipt.Digest([]byte("prev")))
	got := fmt.Sprintf("%s\nhash %s\n", r.Encode(), r.Hash)
	path := filepath.Join("testdata", "receipt.txt")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("encoding changed (UPDATE_GOLDEN=1 only with a new Version):\n%s\nwant:\n%s", got, want)
	}
}

// TestDecode checks the decoder of untrusted records: a receipt round
// trips; bad versions, digests, fields and sizes are errors.
func TestDecode(t *testing.T) {
	r := chain("acme", 2)[1]
	r.Args = nil
	good, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := receipt.Decode(good)
	if err != nil || back.Hash != r.Hash || back.Sum() != r.Hash {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	cases := map[string]string{
		"not JSON":      `{`,
		"two values":    string(good) + ` {}`,
		"unknown field": strings.Replace(string(good), `{"v":1`, `{"v":1,"extra":1`, 1),
		"version":       strings.Replace(string(good), `{"v":1`, `{"v":2`, 1),
		"seq 0":         strings.Replace(string(good), `"seq":2`, `"seq":0`, 1),
		"hash":          strings.Replace(string(good), r.Hash, "zz", 1),
		"prev":          strings.Replace(string(good), r.Prev, strings.ToUpper(r.Prev), 1),
		"no tenant":     strings.Replace(string(good), `"tenant":"acme"`, `"tenant":""`, 1),
		"long tool":     strings.Replace(string(good), `"tool":"core:echo"`, `"tool":"`+strings.Repeat("x", receipt.MaxField+1)+`"`, 1),
	}
	for name, in := range cases {
		if _, err := receipt.Decode([]byte(in)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestSSHKeygenVerifies checks a head signature with the real
// `ssh-keygen -Y verify`, from the message and signature files a
// reviewer would write, and that an altered message fails there too.
func TestSSHKeygenVerifies(t *testing.T) {
	kg, err := exec.LookPath("ssh-keygen")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-keygen is missing (.ci/run installs openssh-client)")
		}
		t.Skip("ssh-keygen is not installed")
	}
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "operator")
	if out, err := exec.Command(kg, "-q", "-t", "ed25519", "-N", "", "-C", "operator", "-f", keyPath).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pem, _ := os.ReadFile(keyPath)
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := os.ReadFile(keyPath + ".pub")
	allowed := filepath.Join(dir, "allowed_signers")
	os.WriteFile(allowed, []byte(`ops@example.com namespaces="agenthost-receipts" `+string(pub)), 0o644)
	rs := chain("acme", 3)
	sig := sign(t, signer, rs[2])
	os.WriteFile(filepath.Join(dir, "head.sig"), []byte(sig.Signature), 0o644)
	verify := func(msg []byte) ([]byte, error) {
		cmd := exec.Command(kg, "-Y", "verify", "-n", receipt.Namespace, "-f", allowed, "-I", "ops@example.com", "-s", filepath.Join(dir, "head.sig"))
		cmd.Stdin = bytes.NewReader(msg)
		return cmd.CombinedOutput()
	}
	if out, err := verify(sig.Message()); err != nil {
		t.Fatalf("ssh-keygen refuses the head signature: %v\n%s", err, out)
	}
	other := *sig
	other.Seq = 2
	if out, err := verify(other.Message()); err == nil {
		t.Fatalf("ssh-keygen verifies a signature moved to another head:\n%s", out)
	}
	if _, err := sig.Check(nil); err != nil {
		t.Fatal(err)
	}
}

// TestRecorder writes through the batching recorder, signs every 100
// receipts and at Close, and verifies the chains it made.
func TestRecorder(t *testing.T) {
	ctx := context.Background()
	mem := receipt.NewMemory(10000)
	key := newSigner(t)
	rec := receipt.NewRecorder(mem, receipt.RecorderOptions{Signer: key, SignEvery: 100, Queue: 16, Batch: 8})
	for i := range 1050 {
		tenant := []string{"acme", "beta"}[i%2]
		if err := rec.Record(ctx, draft(tenant, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rec.Record(ctx, draft("acme", 1)); !errors.Is(err, receipt.ErrClosed) {
		t.Fatalf("a record after Close: %v", err)
	}
	for _, tenant := range []string{"acme", "beta"} {
		rep, err := receipt.Verify(tenant, mem.Receipts(tenant), mem.Signatures(tenant), nil)
		if err != nil || rep.Break != nil || rep.Receipts != 525 || rep.Signed != 525 || rep.Signatures != 6 {
			t.Fatalf("%s: %+v %v", tenant, rep, err)
		}
	}
	if rec.Written() != 1050 || rec.Lost() != 1 {
		t.Fatalf("written %d lost %d", rec.Written(), rec.Lost())
	}
}

// TestRecorderBounded: a store that refuses everything loses receipts
// (counted), and a full queue makes Record wait, then give up, never grow.
func TestRecorderBounded(t *testing.T) {
	ctx := context.Background()
	mem := receipt.NewMemory(3)
	rec := receipt.NewRecorder(mem, receipt.RecorderOptions{Queue: 1, Batch: 1})
	for i := range 5 {
		rec.Record(ctx, draft("acme", i))
	}
	if err := rec.Close(ctx); err == nil || rec.Written() != 3 || rec.Lost() != 2 {
		t.Fatalf("close: %v written %d lost %d", err, rec.Written(), rec.Lost())
	}
}

func FuzzDecode(f *testing.F) {
	for _, r := range chain("acme", 3) {
		b, _ := json.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"tenant":"a","seq":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := receipt.Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes can be verified without a panic.
		receipt.Verify(r.Tenant, receipt.Seq([]*receipt.Receipt{r}), receipt.Seq[*receipt.Signature](nil), nil)
		r.Sum()
	})
}

// TestParse reads the canonical encoding back: every receipt round trips
// (with and without fuel and approval), and a truncated, padded or
// re-ordered encoding is an error.
func TestParse(t *testing.T) {
	full := draft("acme", 3)
	full.Approval = &receipt.Approval{ID: "a\nb", Decision: "allow", Tenant: "acme", Subject: "x:y", At: -5}
	full.InputsDigest = receipt.Digest([]byte("in"))
	full.Link(4, receipt.Digest([]byte("p")))
	bare := draft("acme", 0)
	bare.Fuel = nil
	bare.Link(1, "")
	for _, r := range []*receipt.Receipt{full, bare} {
		enc := r.Encode()
		back, err := receipt.Parse(enc)
		if err != nil {
			t.Fatal(err)
		}
		back.Hash = r.Hash
		if back.Sum() != r.Hash || !bytes.Equal(back.Encode(), enc) {
			t.Fatalf("round trip:\n%s\n%s", enc, back.Encode())
		}
		bad := map[string][]byte{
			"truncated": enc[:len(enc)-3],
			"trailing":  append(append([]byte{}, enc...), '\n'),
			"length":    bytes.Replace(enc, []byte("tool 9:core:echo"), []byte("tool 8:core:echo"), 1),
			"padded":    bytes.Replace(enc, []byte("seq "), []byte("seq 0"), 1),
			"order":     bytes.Replace(enc, []byte("call "), []byte("tool "), 1),
			"version":   bytes.Replace(enc, []byte("agenthost-receipt 1"), []byte("agenthost-receipt 2"), 1),
		}
		for name, b := range bad {
			if _, err := receipt.Parse(b); err == nil {
				t.Errorf("%s: parsed", name)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, r := range chain("acme", 2) {
		f.Add(r.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := receipt.Parse(b)
		if err != nil {
			return
		}
		// What parses encodes back to the same bytes: one reading only.
		if !bytes.Equal(r.Encode(), b) {
			t.Fatalf("parsed and encoded differ:\n%q\n%q", b, r.Encode())
		}
	})
}

// TestParseMessage reads a signed message back into its head; anything
// else is an error.
func TestParseMessage(t *testing.T) {
	s := &receipt.Signature{Tenant: "a\nb", Seq: 7, Hash: receipt.Digest(nil), At: 99}
	back, err := receipt.ParseMessage(s.Message())
	if err != nil || *back != *s {
		t.Fatalf("%+v %v", back, err)
	}
	for _, bad := range []string{"", "agenthost-receipts 2\n", string(s.Message()) + "x", strings.Replace(string(s.Message()), "seq 7", "seq x", 1)} {
		if _, err := receipt.ParseMessage([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestFit: a text field a caller chose that is too long or not UTF-8
// (a token's subject in the approval) is fitted so the receipt still
// passes Check, keeping a prefix and the whole value's digest.
func TestFit(t *testing.T) {
	long := strings.Repeat("s", 5000)
	for _, tc := range []struct {
		name, subject, tool string
	}{
		{"long subject", long, "core:echo"},
		{"bad UTF-8", "alice\xff\xfe", "core:echo"},
		{"long multibyte", strings.Repeat("é", 700), "x:" + strings.Repeat("é", 600)},
		{"fits", "alice", "core:echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := draft("acme", 1)
			r.Tool = tc.tool
			r.Approval = &receipt.Approval{ID: "apr_1", Decision: "allow-once", Tenant: "acme", Subject: tc.subject}
			r.Fit()
			r.Link(1, "")
			if err := r.Check(); err != nil {
				t.Fatalf("after Fit: %v", err)
			}
			s := r.Approval.Subject
			if tc.subject == "alice" {
				if s != "alice" || r.Tool != "core:echo" {
					t.Fatalf("a field that fits changed: %q %q", s, r.Tool)
				}
				return
			}
			if len(s) > receipt.MaxField || !strings.Contains(s, "sha256:") {
				t.Errorf("subject %d bytes: %q", len(s), s[:min(len(s), 80)])
			}
		})
	}
}
