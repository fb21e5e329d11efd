package meter

import (
	"errors"
	"fmt"
)

// Opcodes the metering pass treats specially.
const (
	opUnreachable        = 0x00
	opBlock              = 0x02
	opLoop               = 0x03
	opIf                 = 0x04
	opElse               = 0x05
	opEnd                = 0x0b
	opBr                 = 0x0c
	opBrIf               = 0x0d
	opBrTable            = 0x0e
	opReturn             = 0x0f
	opCall               = 0x10
	opCallIndirect       = 0x11
	opReturnCall         = 0x12
	opReturnCallIndirect = 0x13
	opGlobalGet          = 0x23
	opGlobalSet          = 0x24
	opI64Const           = 0x42
	opI64LtS             = 0x53
	opI64Add             = 0x7c
	opI64Sub             = 0x7d
	opRefFunc            = 0xd2
	opPrefixMisc         = 0xfc
	opPrefixSIMD         = 0xfd
	opPrefixAtomic       = 0xfe
	blockTypeEmpty       = 0x40
)

// errExceptions rejects the exception-handling proposal, which wazero does
// not implement either.
var errExceptions = errors.New("exception handling instructions are not supported")

// frameKind is the kind of a structured control instruction.
type frameKind uint8

const (
	frameFunc frameKind = iota
	frameBlock
	frameLoop
	frameIf
)

// frame is one entry of the control stack. targeted records whether a
// branch may land on the frame's end, which then starts a new segment.
type frame struct {
	kind     frameKind
	targeted bool
	wrapped  bool // a loop whose check refills out of line (see beginLoop)
	head     int  // index in charges of a wrapped loop's check
}

// insertKind is the kind of code the pass inserts at a position.
type insertKind uint8

const (
	insCharge      insertKind = iota // subtract the segment cost from the local counter
	insCheckCharge                   // same, then refill if below zero (loop headers)
	insEntry                         // load the counter from the global, charge, check
	insExit                          // check, then store the counter to the global
	insFlush                         // store the counter to the global
	insReload                        // load the counter from the global
	insLoopCheck                     // charge, branch to the loop's refill pad if below zero
	insLoopPad                       // the refill pad of a wrapped loop (cost: its check's)
)

// insert is a pending insertion of metering code at offset pos of the
// rewritten body.
type insert struct {
	pos  int
	kind insertKind
	cost int64
	ref  int // insLoopPad: index in charges of the loop's check
}

// rewriter meters function bodies of one module. Its fields are fixed for
// the module; the scratch slices are reused across bodies.
type rewriter struct {
	numImportedFuncs uint32   // imported functions of the original module
	numFuncs         uint32   // all functions of the original module
	numGlobals       uint32   // all globals of the original module
	addedFuncs       uint32   // functions imported by the pass, shifting defined ones
	counter          uint32   // index of the fuel counter global
	refill           uint32   // index of the refill import
	local            uint32   // index of the counter local of the current body
	typeParams       []uint32 // number of parameters of each type, for loop block types
	depths           []uint32 // scratch: the labels of the branch being rewritten

	stack   []frame
	charges []insert // segment charges, in position order
	others  []insert // flushes, reloads and exits, in position order
	out     []byte
}

// funcIndex maps a function index of the original module to the
// instrumented one, rejecting indices the original could not use.
func (w *rewriter) funcIndex(idx uint32) (uint32, error) {
	if idx >= w.numFuncs {
		return 0, fmt.Errorf("function index %d out of range (%d functions)", idx, w.numFuncs)
	}
	if idx < w.numImportedFuncs {
		return idx, nil
	}
	return idx + w.addedFuncs, nil
}

// body rewrites one function body (the expression after the locals) and
// appends the result to dst. local is the index of the counter local the
// caller declared for it.
//
// The body is split into segments: maximal runs of instructions that
// always execute together once the first one does. A segment starts at
// the function entry, at each loop header, at each arm of an if, after
// each branch and after the end of any block a branch may target. Each
// segment is charged, at its start, one unit per instruction in it
// (structural else and end cost nothing), so the total charged is exactly
// the number of instructions executed, whatever path is taken.
//
// The counter lives in a local while the function runs: a charge is a
// single subtraction. It is checked (and refilled through the host when
// below zero) at the function entry, at loop headers, before calls to
// imports or through tables, and at every exit; it is stored to the global
// before any call or exit and reloaded after a call. Every cycle of
// execution passes a check, and no call returns with more charged than
// the host granted.
func (w *rewriter) body(dst, code []byte, local uint32) ([]byte, error) {
	r := &reader{b: code}
	w.local = local
	w.stack = append(w.stack[:0], frame{kind: frameFunc})
	w.charges = w.charges[:0]
	w.others = w.others[:0]
	w.out = w.out[:0]
	segPos, segKind, segCost := 0, insEntry, int64(0)
	closeSeg := func() {
		switch {
		case segKind == insLoopCheck:
			// Recorded when the loop began: the last check of that kind.
			for i := len(w.charges) - 1; i >= 0; i-- {
				if w.charges[i].pos == segPos && w.charges[i].kind == insLoopCheck {
					w.charges[i].cost += segCost
					break
				}
			}
		case segCost > 0 || segKind == insEntry:
			w.charges = append(w.charges, insert{pos: segPos, kind: segKind, cost: segCost})
		}
		segCost = 0
		segKind = insCharge
	}
	openSeg := func(kind insertKind) { segPos, segKind = len(w.out), kind }
	at := func(kind insertKind) { w.others = append(w.others, insert{pos: len(w.out), kind: kind}) }
	for {
		if r.eof() {
			return nil, errors.New("function body ends without end")
		}
		start := r.pos
		op, _ := r.byte()
		switch op {
		case opBlock, opLoop, opIf:
			if err := skipBlockType(r); err != nil {
				return nil, err
			}
			segCost++
			switch op {
			case opBlock:
				w.stack = append(w.stack, frame{kind: frameBlock})
				w.out = append(w.out, code[start:r.pos]...)
			case opLoop:
				closeSeg()
				f := w.beginLoop(code[start:r.pos])
				if f.wrapped {
					// The check's charge is recorded now, so the pad can
					// refer to it; closeSeg adds the cost.
					w.charges = append(w.charges, insert{pos: len(w.out), kind: insLoopCheck})
					f.head = len(w.charges) - 1
					segPos, segKind, segCost = len(w.out), insLoopCheck, 0
				} else {
					openSeg(insCheckCharge)
				}
				w.stack = append(w.stack, f)
			default:
				w.stack = append(w.stack, frame{kind: frameIf})
				closeSeg()
				w.out = append(w.out, code[start:r.pos]...)
				openSeg(insCharge)
			}
			continue
		case opElse:
			if top := len(w.stack) - 1; top < 1 || w.stack[top].kind != frameIf {
				return nil, errors.New("else outside if")
			}
			closeSeg()
			w.out = append(w.out, op)
			openSeg(insCharge)
			continue
		case opEnd:
			top := len(w.stack) - 1
			f := w.stack[top]
			w.stack = w.stack[:top]
			switch {
			case f.kind == frameFunc:
				closeSeg()
				at(insExit)
				w.out = append(w.out, op)
				if !r.eof() {
					return nil, fmt.Errorf("%d bytes after the end of the function body", len(code)-r.pos)
				}
				return w.emit(dst), nil
			case f.kind == frameLoop || (f.kind == frameBlock && !f.targeted):
				// Only reached by falling through: the segment goes on.
				w.out = append(w.out, op)
				if f.wrapped {
					w.endLoop(f)
				}
			default:
				closeSeg()
				w.out = append(w.out, op)
				openSeg(insCharge)
			}
			continue
		case opBr, opBrIf, opBrTable:
			exits, err := w.readBranch(r, op)
			if err != nil {
				return nil, err
			}
			if exits {
				at(insExit)
			}
			segCost++
			w.appendBranch(op)
			closeSeg()
			openSeg(insCharge)
			continue
		case opReturn:
			at(insExit)
		case opUnreachable:
			at(insFlush)
		case opCall, opReturnCall, opRefFunc:
			idx, err := r.u32()
			if err != nil {
				return nil, err
			}
			imported := idx < w.numImportedFuncs
			if idx, err = w.funcIndex(idx); err != nil {
				return nil, err
			}
			segCost++
			switch {
			case op == opReturnCall || (op == opCall && imported):
				at(insExit)
			case op == opCall:
				at(insFlush)
			}
			w.out = append(w.out, op)
			w.out = appendU32(w.out, idx)
			switch op {
			case opCall:
				at(insReload)
			case opReturnCall:
				closeSeg()
				openSeg(insCharge)
			}
			continue
		case opCallIndirect, opReturnCallIndirect:
			if err := skipImmediates(r, op); err != nil {
				return nil, err
			}
			at(insExit)
			segCost++
			w.out = append(w.out, code[start:r.pos]...)
			if op == opCallIndirect {
				at(insReload)
			} else {
				closeSeg()
				openSeg(insCharge)
			}
			continue
		case opGlobalGet, opGlobalSet:
			idx, err := r.u32()
			if err != nil {
				return nil, err
			}
			if idx >= w.numGlobals {
				return nil, fmt.Errorf("global index %d out of range (%d globals)", idx, w.numGlobals)
			}
		case 0x20, 0x21, 0x22: // local.get, local.set, local.tee
			idx, err := r.u32()
			if err != nil {
				return nil, err
			}
			if idx >= w.local {
				return nil, fmt.Errorf("local index %d out of range (%d locals)", idx, w.local)
			}
		default:
			if err := skipImmediates(r, op); err != nil {
				return nil, err
			}
		}
		segCost++
		w.out = append(w.out, code[start:r.pos]...)
		if op == opReturn || op == opUnreachable {
			closeSeg()
			openSeg(insCharge)
		}
	}
}

// beginLoop appends the start of a loop (header is the loop instruction
// as read) and returns its frame. A loop without parameters is wrapped so
// that its check refills out of line:
//
//	block bt            ;; exit, with the loop's results
//	  loop              ;; re-entry after a refill
//	    block           ;; pad
//	      loop bt       ;; the original loop; its check: br_if pad
//	        ...
//	      end
//	      br exit
//	    end
//	    PAD             ;; refill, undo this check's charge, br re-entry
//	  end
//	  unreachable
//	end
//
// A call inside a loop, even on a path never taken, makes wazero's
// compiler keep the loop's live values in memory across it; the pad
// keeps the only call of the check outside the original loop. (Measured:
// a refill call at the header of the Go primes loop cost 25% of its run.)
func (w *rewriter) beginLoop(header []byte) frame {
	bt := header[1:]
	if !w.paramless(bt) {
		w.out = append(w.out, header...)
		return frame{kind: frameLoop}
	}
	w.out = append(w.out, opBlock)
	w.out = append(w.out, bt...)
	w.out = append(w.out, opLoop, blockTypeEmpty, opBlock, blockTypeEmpty)
	w.out = append(w.out, header...)
	return frame{kind: frameLoop, wrapped: true}
}

// endLoop appends the end of a wrapped loop, after the original end.
func (w *rewriter) endLoop(f frame) {
	w.out = append(w.out, opBr, 2, opEnd)
	w.others = append(w.others, insert{pos: len(w.out), kind: insLoopPad, ref: f.head})
	w.out = append(w.out, opBr, 0, opEnd, opUnreachable, opEnd)
}

// paramless reports whether a block type takes no parameters.
func (w *rewriter) paramless(bt []byte) bool {
	r := &reader{b: bt}
	if c := bt[0]; c == blockTypeEmpty || c >= 0x6f && c <= 0x7f {
		return true
	}
	idx, err := r.sleb(33)
	return err == nil && idx < int64(len(w.typeParams)) && w.typeParams[idx] == 0
}

// readBranch reads the labels of br, br_if or br_table into w.depths,
// marks their targets, and reports whether one of them leaves the
// function.
func (w *rewriter) readBranch(r *reader, op byte) (exits bool, err error) {
	n := uint32(0)
	if op == opBrTable {
		if n, err = r.u32(); err != nil {
			return false, err
		}
	}
	w.depths = w.depths[:0]
	for i := uint64(0); i <= uint64(n); i++ {
		depth, err := r.u32()
		if err != nil {
			return false, err
		}
		if err := w.target(depth); err != nil {
			return false, err
		}
		exits = exits || int(depth) == len(w.stack)-1
		w.depths = append(w.depths, depth)
	}
	return exits, nil
}

// appendBranch appends the branch read by readBranch, its labels shifted
// past the three blocks wrapped around each loop it leaves.
func (w *rewriter) appendBranch(op byte) {
	w.out = append(w.out, op)
	if op == opBrTable {
		w.out = appendU32(w.out, uint32(len(w.depths)-1))
	}
	for _, d := range w.depths {
		shifted := d
		for i := len(w.stack) - 1; i > len(w.stack)-1-int(d); i-- {
			if w.stack[i].wrapped {
				shifted += 3
			}
		}
		w.out = appendU32(w.out, shifted)
	}
}

// target marks the frame a branch of the given depth lands on.
func (w *rewriter) target(depth uint32) error {
	if int(depth) >= len(w.stack) {
		return fmt.Errorf("branch depth %d out of range", depth)
	}
	w.stack[len(w.stack)-1-int(depth)].targeted = true
	return nil
}

// emit appends the rewritten body with the insertions to dst. At one
// position the segment charge goes first: the other insertions belong to
// the instruction there, which is part of the segment.
func (w *rewriter) emit(dst []byte) []byte {
	prev, j := 0, 0
	for _, c := range w.charges {
		for ; j < len(w.others) && w.others[j].pos < c.pos; j++ {
			dst = append(dst, w.out[prev:w.others[j].pos]...)
			prev = w.others[j].pos
			dst = w.appendInsert(dst, w.others[j])
		}
		dst = append(dst, w.out[prev:c.pos]...)
		prev = c.pos
		dst = w.appendInsert(dst, c)
	}
	for ; j < len(w.others); j++ {
		dst = append(dst, w.out[prev:w.others[j].pos]...)
		prev = w.others[j].pos
		dst = w.appendInsert(dst, w.others[j])
	}
	return append(dst, w.out[prev:]...)
}

// appendInsert appends the code of one insertion. With $c the counter
// local, $fuel the counter global and $refill the import:
//
//	charge:  local.get $c; i64.const cost; i64.sub; local.set $c
//	check:   local.get $c; i64.const cost; i64.sub; local.tee $c; REFILL
//	entry:   global.get $fuel; i64.const cost; i64.sub; local.tee $c; REFILL
//	exit:    local.get $c; REFILL; local.get $c; global.set $fuel
//	flush:   local.get $c; global.set $fuel
//	reload:  global.get $fuel; local.set $c
//	loop:    local.get $c; i64.const cost; i64.sub; local.tee $c;
//	         i64.const 0; i64.lt_s; br_if $pad
//	pad:     local.get $c; call $refill; local.tee $c; global.set $fuel;
//	         local.get $c; i64.const cost; i64.add; local.set $c
//	REFILL:  i64.const 0; i64.lt_s; if
//	           local.get $c; call $refill; local.tee $c; global.set $fuel
//	         end
//
// REFILL stores the new counter to the global too, so after a trap the
// global is never older than the last refill.
//
// Each is stack-neutral, so it is valid at any instruction boundary,
// including unreachable code and blocks with parameters.
func (w *rewriter) appendInsert(dst []byte, in insert) []byte {
	switch in.kind {
	case insCharge, insCheckCharge:
		dst = w.appendLocal(dst, 0x20)
		dst = append(dst, opI64Const)
		dst = appendS64(dst, in.cost)
		dst = append(dst, opI64Sub)
		if in.kind == insCharge {
			return w.appendLocal(dst, 0x21)
		}
		dst = w.appendLocal(dst, 0x22)
		return w.appendRefill(dst)
	case insEntry:
		dst = w.appendGlobal(dst, opGlobalGet)
		if in.cost == 0 {
			return w.appendLocal(dst, 0x21)
		}
		dst = append(dst, opI64Const)
		dst = appendS64(dst, in.cost)
		dst = append(dst, opI64Sub)
		dst = w.appendLocal(dst, 0x22)
		return w.appendRefill(dst)
	case insExit:
		dst = w.appendLocal(dst, 0x20)
		dst = w.appendRefill(dst)
		dst = w.appendLocal(dst, 0x20)
		return w.appendGlobal(dst, opGlobalSet)
	case insFlush:
		dst = w.appendLocal(dst, 0x20)
		return w.appendGlobal(dst, opGlobalSet)
	case insLoopCheck:
		dst = w.appendLocal(dst, 0x20)
		dst = append(dst, opI64Const)
		dst = appendS64(dst, in.cost)
		dst = append(dst, opI64Sub)
		dst = w.appendLocal(dst, 0x22)
		return append(dst, opI64Const, 0, opI64LtS, opBrIf, 1)
	case insLoopPad:
		dst = w.appendLocal(dst, 0x20)
		dst = append(dst, opCall)
		dst = appendU32(dst, w.refill)
		dst = w.appendLocal(dst, 0x22)
		dst = w.appendGlobal(dst, opGlobalSet)
		dst = w.appendLocal(dst, 0x20)
		dst = append(dst, opI64Const)
		dst = appendS64(dst, w.charges[in.ref].cost)
		dst = append(dst, opI64Add)
		return w.appendLocal(dst, 0x21)
	default: // insReload
		dst = w.appendGlobal(dst, opGlobalGet)
		return w.appendLocal(dst, 0x21)
	}
}

func (w *rewriter) appendLocal(dst []byte, op byte) []byte {
	return appendU32(append(dst, op), w.local)
}

func (w *rewriter) appendGlobal(dst []byte, op byte) []byte {
	return appendU32(append(dst, op), w.counter)
}

// appendRefill consumes the counter on the stack: when it is below zero
// the host is asked for the next slice, which becomes the local.
func (w *rewriter) appendRefill(dst []byte) []byte {
	dst = append(dst, opI64Const, 0, opI64LtS, opIf, blockTypeEmpty)
	dst = w.appendLocal(dst, 0x20)
	dst = append(dst, opCall)
	dst = appendU32(dst, w.refill)
	dst = w.appendLocal(dst, 0x22)
	dst = w.appendGlobal(dst, opGlobalSet)
	return append(dst, opEnd)
}

// skipBlockType skips a block type: empty, one value type or a type index
// (a positive signed 33-bit integer).
func skipBlockType(r *reader) error {
	if r.eof() {
		return errEOF
	}
	switch c := r.b[r.pos]; c {
	case blockTypeEmpty, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		r.pos++
		return nil
	}
	v, err := r.sleb(33)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("invalid block type %d", v)
	}
	return nil
}

// skipMemArg skips a memory argument: alignment (with the multi-memory
// flag) and offset.
func skipMemArg(r *reader) error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	_, err = r.u64()
	return err
}

// skipImmediates skips the immediates of every opcode body handles
// generically, and rejects opcodes it does not know.
func skipImmediates(r *reader, op byte) error {
	switch {
	case op == 0x01: // nop
		return nil
	case op >= 0x06 && op <= 0x0a, op == 0x18, op == 0x19, op == 0x1f:
		return errExceptions
	case op == opCallIndirect, op == opReturnCallIndirect:
		if _, err := r.u32(); err != nil {
			return err
		}
		_, err := r.u32()
		return err
	case op == 0x1a, op == 0x1b: // drop, select
		return nil
	case op == 0x1c: // select t*
		n, err := r.u32()
		if err != nil {
			return err
		}
		_, err = r.bytes(int(n))
		return err
	case op >= 0x20 && op <= 0x26: // local.*, global.*, table.get/set
		_, err := r.u32()
		return err
	case op >= 0x28 && op <= 0x3e: // loads and stores
		return skipMemArg(r)
	case op == 0x3f, op == 0x40: // memory.size, memory.grow
		_, err := r.u32()
		return err
	case op == 0x41:
		_, err := r.sleb(32)
		return err
	case op == 0x42:
		_, err := r.sleb(64)
		return err
	case op == 0x43:
		_, err := r.bytes(4)
		return err
	case op == 0x44:
		_, err := r.bytes(8)
		return err
	case op >= 0x45 && op <= 0xc4: // numeric, sign extension
		return nil
	case op == 0xd0: // ref.null t
		_, err := r.byte()
		return err
	case op == 0xd1: // ref.is_null
		return nil
	case op == opPrefixMisc:
		return skipMisc(r)
	case op == opPrefixSIMD:
		return skipSIMD(r)
	case op == opPrefixAtomic:
		return skipAtomic(r)
	}
	return fmt.Errorf("unknown opcode 0x%02x", op)
}

func skipMisc(r *reader) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	imms := 0
	switch {
	case sub <= 7: // saturating truncation
	case sub == 8, sub == 10, sub == 12, sub == 14: // memory.init, memory.copy, table.init, table.copy
		imms = 2
	case sub == 9, sub == 11, sub == 13, sub >= 15 && sub <= 17: // data.drop, memory.fill, elem.drop, table.grow/size/fill
		imms = 1
	default:
		return fmt.Errorf("unknown opcode 0xfc %d", sub)
	}
	for ; imms > 0; imms-- {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

func skipSIMD(r *reader) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 0x0b, sub == 0x5c, sub == 0x5d: // loads and stores
		return skipMemArg(r)
	case sub == 0x0c, sub == 0x0d: // v128.const, i8x16.shuffle
		_, err := r.bytes(16)
		return err
	case sub >= 0x15 && sub <= 0x22: // extract / replace lane
		_, err := r.byte()
		return err
	case sub >= 0x54 && sub <= 0x5b: // load / store lane
		if err := skipMemArg(r); err != nil {
			return err
		}
		_, err := r.byte()
		return err
	case sub <= 0x113:
		return nil
	}
	return fmt.Errorf("unknown opcode 0xfd %d", sub)
}

func skipAtomic(r *reader) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub == 0x03: // atomic.fence
		_, err := r.byte()
		return err
	case sub <= 0x02, sub >= 0x10 && sub <= 0x4e:
		return skipMemArg(r)
	}
	return fmt.Errorf("unknown opcode 0xfe %d", sub)
}
