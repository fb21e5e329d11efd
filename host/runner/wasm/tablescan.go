package wasm

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tetratelabs/wabin/leb128"
	wabin "github.com/tetratelabs/wabin/wasm"
)

// mutatesTables reports whether any function of m can change a table
// (table.set, table.grow, table.fill, table.copy, table.init, elem.drop).
// A reused instance is reset by restoring its memory and globals only, so
// a module that could change its tables is never reused (its calls still
// start from the snapshot, in a fresh instance). The scan decodes every
// instruction; an instruction it does not know (SIMD, threads, exception
// handling, tail calls) counts as a mutation, so the answer errs on the
// safe side.
func mutatesTables(m *wabin.Module) (bool, error) {
	for i, c := range m.CodeSection {
		mut, err := bodyMutatesTables(c.Body)
		if err != nil {
			return true, fmt.Errorf("function %d: %w", i, err)
		}
		if mut {
			return true, nil
		}
	}
	return false, nil
}

// errUnknownOp marks an instruction the scan does not decode.
var errUnknownOp = errors.New("instruction not decoded by the table scan")

// bodyMutatesTables scans one function body (the expression after the
// locals).
func bodyMutatesTables(body []byte) (bool, error) {
	r := bytes.NewReader(body)
	u32 := func() error { _, _, err := leb128.DecodeUint32(r); return err }
	skip := func(n int) error {
		for range n {
			if _, err := r.ReadByte(); err != nil {
				return err
			}
		}
		return nil
	}
	for r.Len() > 0 {
		op, _ := r.ReadByte()
		var err error
		switch {
		case op == 0x00, op == 0x01, op == 0x05, op == 0x0B, op == 0x0F, op == 0x1A, op == 0x1B,
			op >= 0x45 && op <= 0xC4, op == 0xD1:
			// no immediates
		case op == 0x02, op == 0x03, op == 0x04: // block, loop, if: block type
			_, _, err = leb128.DecodeInt33AsInt64(r)
		case op == 0x0C, op == 0x0D, op == 0x10, op >= 0x20 && op <= 0x24, op == 0x25, op == 0xD2:
			err = u32()
		case op == 0x0E: // br_table
			var n uint32
			if n, _, err = leb128.DecodeUint32(r); err == nil {
				for i := uint32(0); i <= n && err == nil; i++ {
					err = u32()
				}
			}
		case op == 0x11: // call_indirect type table
			if err = u32(); err == nil {
				err = u32()
			}
		case op == 0x1C: // select with types
			var n uint32
			if n, _, err = leb128.DecodeUint32(r); err == nil {
				err = skip(int(min(n, uint32(r.Len()+1))))
			}
		case op == 0x26: // table.set
			return true, nil
		case op >= 0x28 && op <= 0x3E: // loads and stores: align, offset
			if err = u32(); err == nil {
				err = u32()
			}
		case op == 0x3F, op == 0x40, op == 0xD0: // memory.size/grow, ref.null
			err = skip(1)
		case op == 0x41:
			_, _, err = leb128.DecodeInt32(r)
		case op == 0x42:
			_, _, err = leb128.DecodeInt64(r)
		case op == 0x43:
			err = skip(4)
		case op == 0x44:
			err = skip(8)
		case op == 0xFC:
			var sub uint32
			if sub, _, err = leb128.DecodeUint32(r); err != nil {
				break
			}
			switch {
			case sub <= 7: // saturating truncations
			case sub == 8: // memory.init data mem
				if err = u32(); err == nil {
					err = skip(1)
				}
			case sub == 9: // data.drop
				err = u32()
			case sub == 10: // memory.copy
				err = skip(2)
			case sub == 11: // memory.fill
				err = skip(1)
			case sub == 16: // table.size
				err = u32()
			case sub >= 12 && sub <= 17: // table.init, elem.drop, table.copy, table.grow, table.fill
				return true, nil
			default:
				return true, errUnknownOp
			}
		default:
			return true, fmt.Errorf("opcode 0x%02x: %w", op, errUnknownOp)
		}
		if err != nil {
			return true, fmt.Errorf("truncated immediate of opcode 0x%02x: %w", op, err)
		}
	}
	return false, nil
}
