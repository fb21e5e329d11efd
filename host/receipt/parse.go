package receipt

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Parse reads a receipt from its canonical encoding ([Receipt.Encode]),
// the form the history stores, from untrusted bytes: the fields must come
// in their order, each text value of exactly its stated length, and
// nothing may follow. Hash is left empty (the store keeps it beside the
// record; [Verify] recomputes it).
func Parse(b []byte) (*Receipt, error) {
	p := parser{b: b}
	r := &Receipt{}
	v := p.int("agenthost-receipt")
	if p.err == nil && v != Version {
		return nil, fmt.Errorf("receipt: version %d; this agenthost reads %d", v, Version)
	}
	r.V = int(v)
	r.Tenant = p.text("tenant")
	r.Seq = p.uint("seq")
	r.CallID = p.text("call")
	r.Tool = p.text("tool")
	r.ToolVersion = p.text("version")
	r.Runner = p.text("runner")
	r.Module = p.text("module")
	r.Grant = p.text("grant")
	r.ArgsDigest = p.text("args")
	r.OutputDigest = p.text("output")
	if p.absent("fuel") {
		r.Fuel = nil
	} else {
		f := p.uint("fuel")
		r.Fuel = &f
	}
	r.Start = p.int("start")
	r.End = p.int("end")
	r.Status = p.text("status")
	r.Code = p.text("code")
	if !p.absent("approval") {
		a := &Approval{}
		a.ID = p.text("approval.id")
		a.Decision = p.text("approval.decision")
		a.Tenant = p.text("approval.tenant")
		a.Subject = p.text("approval.subject")
		a.At = p.int("approval.at")
		r.Approval = a
	}
	r.InputsDigest = p.text("inputs")
	r.Prev = p.text("prev")
	if p.err == nil && len(p.b) > 0 {
		p.err = errors.New("bytes after the last field")
	}
	if p.err != nil {
		return nil, fmt.Errorf("receipt: %w", p.err)
	}
	return r, nil
}

// parser reads the canonical encoding field by field; the first error
// sticks and every later read returns a zero value.
type parser struct {
	b   []byte
	err error
}

// name consumes "name ".
func (p *parser) name(name string) bool {
	if p.err != nil {
		return false
	}
	if len(p.b) < len(name)+1 || string(p.b[:len(name)]) != name || p.b[len(name)] != ' ' {
		p.err = fmt.Errorf("want the field %q", name)
		return false
	}
	p.b = p.b[len(name)+1:]
	return true
}

// absent consumes "name -\n" if that is what comes, else nothing.
func (p *parser) absent(name string) bool {
	if p.err != nil {
		return false
	}
	want := name + " -\n"
	if bytes.HasPrefix(p.b, []byte(want)) {
		p.b = p.b[len(want):]
		return true
	}
	return false
}

// number consumes the digits (and sign) up to the line's end.
func (p *parser) number(name string) string {
	if !p.name(name) {
		return ""
	}
	i := bytes.IndexByte(p.b, '\n')
	if i < 0 || i > 20 {
		p.err = fmt.Errorf("%s: not a number", name)
		return ""
	}
	s := string(p.b[:i])
	p.b = p.b[i+1:]
	return s
}

func (p *parser) int(name string) int64 {
	s := p.number(name)
	if p.err != nil {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(v, 10) != s {
		p.err = fmt.Errorf("%s: %q is not a decimal number", name, s)
	}
	return v
}

func (p *parser) uint(name string) uint64 {
	s := p.number(name)
	if p.err != nil {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(v, 10) != s {
		p.err = fmt.Errorf("%s: %q is not a decimal number", name, s)
	}
	return v
}

// text consumes "name LEN:BYTES\n".
func (p *parser) text(name string) string {
	if !p.name(name) {
		return ""
	}
	i := bytes.IndexByte(p.b, ':')
	if i <= 0 || i > 8 {
		p.err = fmt.Errorf("%s: no length", name)
		return ""
	}
	n, err := strconv.Atoi(string(p.b[:i]))
	if err != nil || n < 0 || n > MaxField || strconv.Itoa(n) != string(p.b[:i]) {
		p.err = fmt.Errorf("%s: bad length %q", name, p.b[:i])
		return ""
	}
	p.b = p.b[i+1:]
	if len(p.b) < n+1 || p.b[n] != '\n' {
		p.err = fmt.Errorf("%s: the value is not %d bytes and a line end", name, n)
		return ""
	}
	s := string(p.b[:n])
	p.b = p.b[n+1:]
	return s
}
