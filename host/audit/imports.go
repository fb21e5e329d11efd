package audit

import (
	"bytes"
	"errors"
	"fmt"
)

// maxImports bounds the imports read from one module.
const maxImports = 100000

// Imports lists the imports of a WebAssembly module as "module.name"
// ("wasi_snapshot_preview1.fd_write", "extism:host/env.http_request"), in
// module order. It reads only the section headers and the import
// section, so its cost is linear in the module's size and small.
func Imports(wasm []byte) ([]string, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly module")
	}
	r := &reader{b: wasm, i: 8}
	for r.i < len(r.b) {
		id := r.byte()
		size := r.u32()
		if r.err != nil {
			return nil, r.err
		}
		end := r.i + int(size)
		if end > len(r.b) || end < r.i {
			return nil, errors.New("a section runs past the end of the module")
		}
		if id != 2 {
			if id > 2 && id != 0 {
				return nil, nil // past where imports may be: none
			}
			r.i = end
			continue
		}
		n := r.u32()
		if r.err != nil {
			return nil, r.err
		}
		if n > maxImports {
			return nil, fmt.Errorf("%d imports", n)
		}
		out := make([]string, 0, n)
		for range n {
			mod, name := r.name(), r.name()
			switch kind := r.byte(); kind {
			case 0: // function: type index
				r.u32()
			case 1: // table: reference type, limits
				r.byte()
				r.limits()
			case 2: // memory: limits
				r.limits()
			case 3: // global: value type, mutability
				r.byte()
				r.byte()
			case 4: // tag: attribute, type index
				r.byte()
				r.u32()
			default:
				return nil, fmt.Errorf("import %s.%s: unknown kind %d", mod, name, kind)
			}
			if r.err != nil {
				return nil, r.err
			}
			out = append(out, mod+"."+name)
		}
		return out, nil
	}
	return nil, r.err
}

type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || r.i >= len(r.b) {
		r.fail()
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errors.New("the module ends early")
	}
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.err = errors.New("a LEB128 number is too long")
	return 0
}

func (r *reader) name() string {
	n := int(r.u32())
	if r.err != nil || n > len(r.b)-r.i {
		r.fail()
		return ""
	}
	s := string(r.b[r.i : r.i+n])
	r.i += n
	return s
}

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}
