package meter

import (
	"errors"
	"fmt"
)

// errEOF reports a module or body that ends in the middle of an item.
var errEOF = errors.New("unexpected end of input")

// reader is a cursor over a byte slice that decodes the WebAssembly binary
// primitives. Every method checks bounds and returns an error instead of
// panicking, so malformed input is always rejected cleanly.
type reader struct {
	b   []byte
	pos int
}

func (r *reader) eof() bool { return r.pos >= len(r.b) }

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errEOF
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.pos {
		return nil, errEOF
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s, nil
}

// u32 decodes an unsigned LEB128 value of at most 32 bits.
func (r *reader) u32() (uint32, error) {
	v, err := r.uleb(32)
	return uint32(v), err
}

// u64 decodes an unsigned LEB128 value of at most 64 bits.
func (r *reader) u64() (uint64, error) { return r.uleb(64) }

func (r *reader) uleb(bits uint) (uint64, error) {
	var v uint64
	var shift uint
	for i := 0; ; i++ {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift >= bits || (bits-shift < 7 && uint64(c&0x7f)>>(bits-shift) != 0) {
			return 0, fmt.Errorf("leb128 overflows %d bits", bits)
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
		shift += 7
	}
}

// sleb skips a signed LEB128 value of at most bits bits and returns it.
func (r *reader) sleb(bits uint) (int64, error) {
	var v int64
	var shift uint
	for {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift >= bits {
			return 0, fmt.Errorf("signed leb128 overflows %d bits", bits)
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, nil
		}
	}
}

// name decodes a length-prefixed string.
func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	s, err := r.bytes(int(n))
	return string(s), err
}

func appendU32(b []byte, v uint32) []byte { return appendU64(b, uint64(v)) }

func appendU64(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}
