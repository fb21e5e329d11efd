// Package receipt holds the receipt of a tool call: who called which tool
// (and which exact module) under which grant, with which arguments, what
// came out, how long it ran and who approved it. Receipts form a hash
// chain per tenant: each names the hash of the one before, so a receipt
// edited, removed, reordered or inserted afterwards breaks the chain at
// that link. The chain's head is signed from time to time with the
// operator's SSH key (namespace agenthost-receipts), so a chain cut short
// or rewritten as a whole is caught too, by anyone holding the public key
// (ssh-keygen -Y verify does).
//
// The package is a leaf: it builds, encodes, links, signs and verifies
// receipts; the history store (host/store) keeps them and the host facade
// records one per call through a [Sink]. docs/RECEIPTS.md describes the
// encoding so that the check can be written again from it.
package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Version is the version of the canonical encoding; it is the first line
// of every encoded receipt and of every signed message.
const Version = 1

// Namespace is the SSH signature namespace of receipt signatures.
const Namespace = "agenthost-receipts"

// Limits on what a decoded receipt may hold (it may come from an
// untrusted export file).
const (
	// MaxField caps each text field (tenant, tool ID, call ID, ...).
	MaxField = 1024
	// MaxPayload caps the stored arguments and the recorded inputs.
	MaxPayload = 16 << 20
	// MaxLine caps one encoded JSON line of an export.
	MaxLine = 2*MaxPayload + 64<<10
)

// Approval records who decided that a call that needed approval may run
// (or may not). It is nil on a call that no approval rule matched.
type Approval struct {
	// ID is the approval request's ID.
	ID string `json:"id"`
	// Decision is "allow-once", "allow", "deny", "timeout" or "auto"
	// (a standing "allow" decision applied to a later call).
	Decision string `json:"decision"`
	// Tenant and Subject say who decided: the tenant and the principal
	// (token subject, console user, "terminal").
	Tenant  string `json:"tenant"`
	Subject string `json:"subject"`
	// At is when the decision was made, in Unix nanoseconds (UTC).
	At int64 `json:"at"`
}

// Receipt is the record of one tool call. The fields up to Prev are
// covered by Hash (see [Receipt.Encode]); Args and Inputs are the stored
// payloads whose digests the receipt holds, carried beside it.
type Receipt struct {
	// V is the encoding version ([Version]).
	V int `json:"v"`
	// Tenant owns the chain the receipt belongs to.
	Tenant string `json:"tenant"`
	// Seq numbers the tenant's receipts from 1, without gaps.
	Seq uint64 `json:"seq"`
	// CallID identifies the call (random, 16 hex digits).
	CallID string `json:"callId"`
	// Tool and ToolVersion are the tool's ID and manifest version.
	Tool        string `json:"tool"`
	ToolVersion string `json:"toolVersion"`
	// Runner is the kind of runner: "wasm:wasi-command", "wasm:extism",
	// "external-script", "service-method", "workflow", "mcp".
	Runner string `json:"runner"`
	// Module is the hex sha256 of the WebAssembly module, the script or
	// the workflow file the call ran; "" for tools without a file (Go
	// functions, imported MCP tools), which Runner names.
	Module string `json:"module"`
	// Grant is the hex sha256 of the effective grant's canonical encoding.
	Grant string `json:"grant"`
	// ArgsDigest is the hex sha256 of the canonical arguments (compact
	// JSON, object keys sorted) as the tool received them.
	ArgsDigest string `json:"argsDigest"`
	// OutputDigest is the hex sha256 of the envelope's output (compact
	// JSON; null for a failed call).
	OutputDigest string `json:"outputDigest"`
	// Fuel is the fuel the call used; nil when the runner does not meter.
	Fuel *uint64 `json:"fuel,omitempty"`
	// Start and End bound the call, in Unix nanoseconds (UTC).
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Status is the envelope's status; Code its error code ("" on
	// success).
	Status string `json:"status"`
	Code   string `json:"code,omitempty"`
	// Approval is the decision that let the call run; nil when no
	// approval rule matched.
	Approval *Approval `json:"approval,omitempty"`
	// InputsDigest is the hex sha256 of Inputs; "" when none were recorded.
	InputsDigest string `json:"inputsDigest,omitempty"`
	// Prev is the previous receipt's Hash in the tenant's chain; "" for
	// the first.
	Prev string `json:"prev"`
	// Hash is the hex sha256 of [Receipt.Encode].
	Hash string `json:"hash"`

	// Args are the canonical arguments, stored so that the call can be
	// run again; not covered by Hash directly but by ArgsDigest.
	Args json.RawMessage `json:"args,omitempty"`
	// Inputs are the non-deterministic inputs the guest saw (clock,
	// random, environment), as the runner recorded them for replay;
	// covered by InputsDigest.
	Inputs json.RawMessage `json:"inputs,omitempty"`
}

// Digest returns the hex sha256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Encode returns the canonical encoding that Hash covers: the line
// "agenthost-receipt 1", then one line per field in a fixed order, each
// "name value": a text value is written as its length in bytes, a colon
// and the bytes; a number in decimal; an absent fuel or approval as "-".
// docs/RECEIPTS.md lists the fields.
func (r *Receipt) Encode() []byte {
	b := make([]byte, 0, 512+len(r.Tenant)+len(r.Tool))
	return r.appendEncoding(b)
}

func (r *Receipt) appendEncoding(b []byte) []byte {
	b = append(b, "agenthost-receipt "...)
	b = strconv.AppendInt(b, int64(r.V), 10)
	b = append(b, '\n')
	b = text(b, "tenant", r.Tenant)
	b = append(b, "seq "...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, '\n')
	b = text(b, "call", r.CallID)
	b = text(b, "tool", r.Tool)
	b = text(b, "version", r.ToolVersion)
	b = text(b, "runner", r.Runner)
	b = text(b, "module", r.Module)
	b = text(b, "grant", r.Grant)
	b = text(b, "args", r.ArgsDigest)
	b = text(b, "output", r.OutputDigest)
	b = append(b, "fuel "...)
	if r.Fuel == nil {
		b = append(b, '-')
	} else {
		b = strconv.AppendUint(b, *r.Fuel, 10)
	}
	b = append(b, '\n')
	b = append(b, "start "...)
	b = strconv.AppendInt(b, r.Start, 10)
	b = append(b, "\nend "...)
	b = strconv.AppendInt(b, r.End, 10)
	b = append(b, '\n')
	b = text(b, "status", r.Status)
	b = text(b, "code", r.Code)
	if a := r.Approval; a == nil {
		b = append(b, "approval -\n"...)
	} else {
		b = text(b, "approval.id", a.ID)
		b = text(b, "approval.decision", a.Decision)
		b = text(b, "approval.tenant", a.Tenant)
		b = text(b, "approval.subject", a.Subject)
		b = append(b, "approval.at "...)
		b = strconv.AppendInt(b, a.At, 10)
		b = append(b, '\n')
	}
	b = text(b, "inputs", r.InputsDigest)
	b = text(b, "prev", r.Prev)
	return b
}

func text(b []byte, name, v string) []byte {
	b = append(b, name...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, ':')
	b = append(b, v...)
	return append(b, '\n')
}

// Sum returns the hash of r as it stands: the hex sha256 of its encoding.
func (r *Receipt) Sum() string {
	var buf [768]byte
	sum := sha256.Sum256(r.appendEncoding(buf[:0]))
	return hex.EncodeToString(sum[:])
}

// Link makes r the receipt seq of its tenant's chain after the receipt
// whose hash is prev ("" for the first), and sets its Hash.
func (r *Receipt) Link(seq uint64, prev string) {
	r.V, r.Seq, r.Prev = Version, seq, prev
	r.Hash = r.Sum()
}

// Decode reads one receipt in its JSON form (an export line) from
// untrusted bytes: unknown fields, oversized values,
// malformed digests and a wrong version are errors; the hash is not
// checked here (that is [Verify]'s work).
func Decode(b []byte) (*Receipt, error) {
	if len(b) > MaxLine {
		return nil, fmt.Errorf("receipt: %d bytes; the limit is %d", len(b), MaxLine)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Receipt
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	if dec.More() {
		return nil, errors.New("receipt: more than one JSON value")
	}
	if err := r.Check(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Fit makes r's text fields fit Check: a field longer than MaxField
// bytes, or not UTF-8, is replaced by its valid prefix and the sha256 of
// the whole value ("<prefix>…sha256:<hex>"), so that a value a caller
// chose (a token's subject, a tenant's name) can neither break the
// chain's verification nor be recorded as something it is not.
func (r *Receipt) Fit() {
	for _, f := range []*string{&r.Tenant, &r.CallID, &r.Tool, &r.ToolVersion, &r.Runner, &r.Status, &r.Code} {
		*f = fitField(*f)
	}
	if a := r.Approval; a != nil {
		for _, f := range []*string{&a.ID, &a.Decision, &a.Tenant, &a.Subject} {
			*f = fitField(*f)
		}
	}
}

func fitField(v string) string {
	if len(v) <= MaxField && utf8.ValidString(v) {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	tail := "…sha256:" + hex.EncodeToString(sum[:])
	head := strings.ToValidUTF8(v, "\ufffd")
	if len(head) > MaxField-len(tail) {
		head = head[:MaxField-len(tail)]
		for !utf8.ValidString(head) {
			head = head[:len(head)-1]
		}
	}
	return head + tail
}

// Check validates the shape of r (not its hash): the version, the
// tenant and sequence number, the lengths of the text fields and the form
// of the digests.
func (r *Receipt) Check() error {
	if r.V != Version {
		return fmt.Errorf("receipt: version %d; this agenthost reads %d", r.V, Version)
	}
	if r.Tenant == "" {
		return errors.New("receipt: no tenant")
	}
	if r.Seq == 0 || r.Seq > 1<<62 {
		return fmt.Errorf("receipt: seq %d out of range", r.Seq)
	}
	for _, f := range []struct{ name, v string }{
		{"tenant", r.Tenant}, {"callId", r.CallID}, {"tool", r.Tool}, {"toolVersion", r.ToolVersion},
		{"runner", r.Runner}, {"status", r.Status}, {"code", r.Code},
	} {
		if len(f.v) > MaxField || !utf8.ValidString(f.v) {
			return fmt.Errorf("receipt: %s is longer than %d bytes or not UTF-8", f.name, MaxField)
		}
	}
	if a := r.Approval; a != nil {
		for _, f := range []struct{ name, v string }{{"approval.id", a.ID}, {"approval.decision", a.Decision}, {"approval.tenant", a.Tenant}, {"approval.subject", a.Subject}} {
			if len(f.v) > MaxField || !utf8.ValidString(f.v) {
				return fmt.Errorf("receipt: %s is longer than %d bytes or not UTF-8", f.name, MaxField)
			}
		}
	}
	for _, f := range []struct {
		name, v string
		empty   bool
	}{
		{"module", r.Module, true}, {"grant", r.Grant, true}, {"argsDigest", r.ArgsDigest, false},
		{"outputDigest", r.OutputDigest, false}, {"inputsDigest", r.InputsDigest, true},
		{"prev", r.Prev, r.Seq == 1}, {"hash", r.Hash, false},
	} {
		if f.v == "" && f.empty {
			continue
		}
		if !isDigest(f.v) {
			return fmt.Errorf("receipt %d: %s %q is not a hex sha256", r.Seq, f.name, clip(f.v))
		}
	}
	if r.Seq == 1 && r.Prev != "" {
		return errors.New("receipt 1: prev must be empty")
	}
	if len(r.Args) > MaxPayload || len(r.Inputs) > MaxPayload {
		return fmt.Errorf("receipt %d: a payload is larger than %d bytes", r.Seq, MaxPayload)
	}
	return nil
}

// isDigest reports whether s is 64 lowercase hex digits.
func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !hexDigit[s[i]] {
			return false
		}
	}
	return true
}

// hexDigit marks the lowercase hex digits.
var hexDigit = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
