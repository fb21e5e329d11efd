package natsexec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MinKeyBytes is the shortest shared key accepted.
const MinKeyBytes = 32

// Headers of calls and results. Every one of them is covered by the
// message's signature; none is believed without it. A call's ID is its
// stream message ID (Nats-Msg-Id), so that the server's duplicate window
// applies to every copy of it.
const (
	headerTool      = "Agenthost-Tool"
	headerTenant    = "Agenthost-Tenant"
	headerIssued    = "Agenthost-Issued"   // unix ms
	headerDeadline  = "Agenthost-Deadline" // unix ms
	headerSignature = "Agenthost-Signature"
)

// LoadKey reads a shared key file: raw bytes, or hex (white space
// around it ignored). It must hold at least MinKeyBytes bytes.
func LoadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("queue: key: %w", err)
	}
	if h, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil {
		b = h
	}
	if len(b) < MinKeyBytes {
		return nil, fmt.Errorf("%w (%s has %d)", ErrShortKey, path, len(b))
	}
	return b, nil
}

// DecodeKey reads a shared key written in hex (2×MinKeyBytes digits or
// more).
func DecodeKey(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("queue: the key is not hex: %w", err)
	}
	if len(b) < MinKeyBytes {
		return nil, fmt.Errorf("%w (it has %d)", ErrShortKey, len(b))
	}
	return b, nil
}

// keys are the subkeys of the shared key, one per purpose (HKDF), so that
// a signature made for one kind of message never verifies as another.
type keys struct {
	call, result, cancel, seal *macKey
}

func newKeys(secret []byte) *keys {
	derive := func(purpose string) *macKey {
		k, err := hkdf.Key(sha256.New, secret, nil, "agenthost queue v1 "+purpose, 32)
		if err != nil {
			panic(err) // only for lengths HKDF cannot give
		}
		return newMacKey(k)
	}
	return &keys{call: derive("call signature"), result: derive("result signature"), cancel: derive("cancel signature"), seal: derive("encryption")}
}

// macKey is an HMAC-SHA256 key with its hash states pooled (a new HMAC
// costs allocations and two hashed blocks; a reset one neither).
type macKey struct {
	pool sync.Pool
}

func newMacKey(k []byte) *macKey {
	m := &macKey{}
	m.pool.New = func() any { return hmac.New(sha256.New, k) }
	return m
}

// sum is the HMAC of fields, each length-prefixed, so that no two lists
// of fields sign the same bytes.
func (m *macKey) sum(fields ...string) []byte {
	n := 0
	for _, f := range fields {
		n += 4 + len(f)
	}
	buf := make([]byte, 0, n)
	for _, f := range fields {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(f)))
		buf = append(buf, f...)
	}
	h := m.pool.Get().(hash.Hash)
	h.Reset()
	h.Write(buf)
	out := h.Sum(make([]byte, 0, sha256.Size))
	m.pool.Put(h)
	return out
}

// cipherFor is the AEAD of one call, for its arguments and its results:
// AES-256-GCM under a key of its own (HMAC of the encryption key and the
// random call ID), so random nonces stay far from GCM's per-key limit
// however many calls one shared key carries.
func (k *keys) cipherFor(id string) cipher.AEAD {
	b, err := aes.NewCipher(k.seal.sum(id))
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return g
}

// sealBody encrypts plain with a random nonce; the call ID is the
// additional data, so a body moved to another call does not open.
func sealBody(g cipher.AEAD, id string, plain []byte) []byte {
	out := make([]byte, g.NonceSize(), g.NonceSize()+len(plain)+g.Overhead())
	rand.Read(out)
	return g.Seal(out, out, plain, []byte(id))
}

func openBody(g cipher.AEAD, id string, body []byte) ([]byte, error) {
	if len(body) < g.NonceSize()+g.Overhead() {
		return nil, errors.New("queue: the body is too short")
	}
	n := g.NonceSize()
	return g.Open(nil, body[:n], body[n:], []byte(id))
}

func digest(b []byte) string {
	d := sha256.Sum256(b)
	return string(d[:])
}

var sigEncoding = base64.RawURLEncoding

// verify compares a signature header with the expected MAC in constant
// time: "" when it matches, else the reason for dropping the message.
func verify(sig string, want []byte) string {
	if sig == "" {
		return ReasonUnsigned
	}
	got, err := sigEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, want) {
		return ReasonBadSignature
	}
	return ""
}

// verifyRaw is verify for a signature carried as the body's raw bytes.
func verifyRaw(sig, want []byte) string {
	if len(sig) == 0 {
		return ReasonUnsigned
	}
	if !hmac.Equal(sig, want) {
		return ReasonBadSignature
	}
	return ""
}

// newToken is 128 random bits in hex: call IDs and reply tokens.
func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isToken reports a token newToken could have made.
func isToken(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// headers makes a header of key, value pairs (one value each, sharing
// one array).
func headers(kv ...string) nats.Header {
	h := make(nats.Header, len(kv)/2)
	vals := make([]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		vals[i/2] = kv[i+1]
		h[kv[i]] = vals[i/2 : i/2+1 : i/2+1]
	}
	return h
}

// call is a verified call.
type call struct {
	id, tenant, tool string
	issued, deadline time.Time
	reply            string // the result subject
	args             []byte
	aead             cipher.AEAD
}

// sealCall makes the message of a call: the signed headers, and the body
// (the reply token, then the arguments) encrypted.
func (k *keys) sealCall(c *call, replyToken string) *nats.Msg {
	c.aead = k.cipherFor(c.id)
	plain := make([]byte, 0, len(replyToken)+len(c.args))
	plain = append(append(plain, replyToken...), c.args...)
	body := sealBody(c.aead, c.id, plain)
	issued := strconv.FormatInt(c.issued.UnixMilli(), 10)
	deadline := strconv.FormatInt(c.deadline.UnixMilli(), 10)
	sig := sigEncoding.EncodeToString(k.call.sum("call", c.id, c.tenant, c.tool, issued, deadline, digest(body)))
	return &nats.Msg{Subject: callSubject + c.tenant, Data: body, Header: headers(
		jetstream.MsgIDHeader, c.id, headerTenant, c.tenant, headerTool, c.tool,
		headerIssued, issued, headerDeadline, deadline, headerSignature, sig)}
}

// openCall verifies a call message and opens its body: the call, or the
// reason it is dropped. The ID, tenant, tool and deadline are the signed
// ones.
func (k *keys) openCall(h nats.Header, body []byte, now time.Time) (*call, string) {
	id, tenant, tool := h.Get(jetstream.MsgIDHeader), h.Get(headerTenant), h.Get(headerTool)
	issued, deadline := h.Get(headerIssued), h.Get(headerDeadline)
	if r := verify(h.Get(headerSignature), k.call.sum("call", id, tenant, tool, issued, deadline, digest(body))); r != "" {
		return nil, r
	}
	is, err1 := strconv.ParseInt(issued, 10, 64)
	dl, err2 := strconv.ParseInt(deadline, 10, 64)
	if !isToken(id) || tenant == "" || tool == "" || err1 != nil || err2 != nil || dl < is {
		return nil, ReasonMalformed
	}
	c := &call{id: id, tenant: tenant, tool: tool, issued: time.UnixMilli(is), deadline: time.UnixMilli(dl)}
	if now.After(c.deadline) {
		return nil, ReasonExpired
	}
	c.aead = k.cipherFor(id)
	plain, err := openBody(c.aead, id, body)
	if err != nil || len(plain) < 32 || !isToken(string(plain[:32])) {
		return nil, ReasonMalformed
	}
	c.reply, c.args = resultSubject+string(plain[:32]), plain[32:]
	return c, ""
}

// sealResult makes the message of a call's result (an envelope in JSON).
func (k *keys) sealResult(c *call, env []byte) *nats.Msg {
	body := sealBody(c.aead, c.id, env)
	sig := sigEncoding.EncodeToString(k.result.sum("result", c.id, c.tenant, c.tool, digest(body)))
	return &nats.Msg{Subject: c.reply, Data: body, Header: headers(headerSignature, sig)}
}

// openResult verifies a result for call c (its ID, tenant and tool are
// the dispatcher's own, not the message's) and opens it.
func (k *keys) openResult(c *call, m *nats.Msg) ([]byte, string) {
	if r := verify(m.Header.Get(headerSignature), k.result.sum("result", c.id, c.tenant, c.tool, digest(m.Data))); r != "" {
		return nil, r
	}
	env, err := openBody(c.aead, c.id, m.Data)
	if err != nil {
		return nil, ReasonMalformed
	}
	return env, ""
}

// cancelSignature is the body of a cancellation of call id.
func (k *keys) cancelSignature(id string) []byte {
	return k.cancel.sum("cancel", id)
}
