package wasm

import (
	"strings"
	"testing"

	"github.com/tetratelabs/wabin/binary"
	"github.com/tetratelabs/wabin/leb128"
	wabin "github.com/tetratelabs/wabin/wasm"
)

func TestBodyMutatesTables(t *testing.T) {
	tests := []struct {
		name    string
		body    []byte
		mutates bool
		unknown bool // the scan gives up
	}{
		{"constant and drop", []byte{0x41, 0x00, 0x1A, 0x0B}, false, false},
		{"loads, stores and calls", []byte{0x41, 0x00, 0x28, 0x02, 0x10, 0x41, 0x01, 0x36, 0x02, 0x00, 0x10, 0x05, 0x11, 0x01, 0x00, 0x0B}, false, false},
		{"br_table", []byte{0x02, 0x40, 0x41, 0x00, 0x0E, 0x02, 0x00, 0x00, 0x00, 0x0B, 0x0B}, false, false},
		{"memory.fill and memory.copy", []byte{0xFC, 0x0B, 0x00, 0xFC, 0x0A, 0x00, 0x00, 0x0B}, false, false},
		{"saturating truncation", []byte{0xFC, 0x00, 0x0B}, false, false},
		{"i64 and f64 constants", []byte{0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x44, 0, 0, 0, 0, 0, 0, 0, 0, 0x0B}, false, false},
		{"table.size", []byte{0xFC, 0x10, 0x00, 0x0B}, false, false},
		{"table.set", []byte{0x41, 0x00, 0xD0, 0x70, 0x26, 0x00, 0x0B}, true, false},
		{"table.grow", []byte{0xFC, 0x0F, 0x00, 0x0B}, true, false},
		{"table.fill", []byte{0xFC, 0x11, 0x00, 0x0B}, true, false},
		{"table.copy", []byte{0xFC, 0x0E, 0x00, 0x00, 0x0B}, true, false},
		{"table.init", []byte{0xFC, 0x0C, 0x00, 0x00, 0x0B}, true, false},
		{"elem.drop", []byte{0xFC, 0x0D, 0x00, 0x0B}, true, false},
		{"SIMD is not decoded", []byte{0xFD, 0x0C, 0x0B}, true, true},
		{"truncated immediate", []byte{0x41}, true, true},
		{"0x26 inside an immediate is not table.set", []byte{0x41, 0x26, 0x1A, 0x0B}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bodyMutatesTables(tc.body)
			if got != tc.mutates || (err != nil) != tc.unknown {
				t.Fatalf("mutates %v err %v, want %v (error %v)", got, err, tc.mutates, tc.unknown)
			}
		})
	}
}

// reactorFixture is a small module with the reactor exports, a mutable
// global, an active data segment and WASI imports.
func reactorFixture() *wabin.Module {
	void := &wabin.FunctionType{}
	ret := &wabin.FunctionType{Results: []wabin.ValueType{wabin.ValueTypeI32}}
	two := &wabin.FunctionType{Params: []wabin.ValueType{wabin.ValueTypeI32, wabin.ValueTypeI32}, Results: []wabin.ValueType{wabin.ValueTypeI32}}
	return &wabin.Module{
		TypeSection: []*wabin.FunctionType{void, ret, two},
		ImportSection: []*wabin.Import{
			{Type: wabin.ExternTypeFunc, Module: "wasi_snapshot_preview1", Name: "fd_fdstat_get", DescFunc: 2},
			{Type: wabin.ExternTypeFunc, Module: "wasi_snapshot_preview1", Name: "fd_prestat_get", DescFunc: 2},
		},
		FunctionSection: []wabin.Index{0, 1, 1},
		CodeSection: []*wabin.Code{
			{Body: []byte{0x0B}},
			{Body: []byte{0x41, 0x00, 0x0B}},
			{Body: []byte{0x41, 0x00, 0x0B}},
		},
		MemorySection: &wabin.Memory{Min: 1, Max: 2, IsMaxEncoded: true},
		GlobalSection: []*wabin.Global{
			{Type: &wabin.GlobalType{ValType: wabin.ValueTypeI32, Mutable: true}, Init: &wabin.ConstantExpression{Opcode: wabin.OpcodeI32Const, Data: leb128.EncodeInt32(7)}},
			{Type: &wabin.GlobalType{ValType: wabin.ValueTypeI64}, Init: &wabin.ConstantExpression{Opcode: wabin.OpcodeI64Const, Data: leb128.EncodeInt64(1)}},
		},
		ExportSection: []*wabin.Export{
			{Type: wabin.ExternTypeFunc, Name: exportInitialize, Index: 2},
			{Type: wabin.ExternTypeFunc, Name: exportInit, Index: 3},
			{Type: wabin.ExternTypeFunc, Name: exportCall, Index: 4},
			{Type: wabin.ExternTypeMemory, Name: "memory", Index: 0},
		},
		DataSection: []*wabin.DataSegment{
			{OffsetExpression: &wabin.ConstantExpression{Opcode: wabin.OpcodeI32Const, Data: leb128.EncodeInt32(16)}, Init: []byte("hello")},
		},
	}
}

func TestRewriteReactor(t *testing.T) {
	code := binary.EncodeModule(reactorFixture())
	if !isReactor(code) {
		t.Fatal("fixture not detected as a reactor")
	}
	rm, err := rewriteReactor(code)
	if err != nil {
		t.Fatal(err)
	}
	if rm.initialSize != 65536 || len(rm.initial) != 21 || string(rm.initial[16:21]) != "hello" || rm.initial[15] != 0 {
		t.Fatalf("initial memory %d bytes, %d stored, segment %q", rm.initialSize, len(rm.initial), rm.initial[16:])
	}
	if len(rm.globals) != 1 || rm.globals[0] != globalExportPrefix+"0" || rm.counter != -1 || !rm.reusable {
		t.Fatalf("globals %q counter %d reusable %v", rm.globals, rm.counter, rm.reusable)
	}
	m, err := binary.DecodeModule(rm.code, wabin.CoreFeaturesV2)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.DataSection) != 0 {
		t.Fatalf("%d data segments left", len(m.DataSection))
	}
	names, err := exportNames(rm.code)
	if err != nil || !names[exportFdCheck] || !names[globalExportPrefix+"0"] || !names[exportCall] {
		t.Fatalf("exports %v (%v)", names, err)
	}
}

func TestRewriteReactor_refusals(t *testing.T) {
	tests := []struct {
		name string
		edit func(*wabin.Module)
		want string
	}{
		{"imported memory", func(m *wabin.Module) {
			m.MemorySection = nil
			m.ImportSection = append(m.ImportSection, &wabin.Import{Type: wabin.ExternTypeMemory, Module: "env", Name: "memory", DescMem: &wabin.Memory{Min: 1}})
		}, "imported memory"},
		{"passive data", func(m *wabin.Module) {
			m.DataSection[0].OffsetExpression = nil
			n := uint32(1)
			m.DataCountSection = &n
		}, "passive"},
		{"segment past the memory", func(m *wabin.Module) {
			m.DataSection[0].OffsetExpression.Data = leb128.EncodeInt32(65534)
		}, "past the initial memory"},
		{"reserved export name", func(m *wabin.Module) {
			m.ExportSection = append(m.ExportSection, &wabin.Export{Type: wabin.ExternTypeFunc, Name: reservedPrefix + "x", Index: 2})
		}, "reserved prefix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := reactorFixture()
			tc.edit(m)
			_, err := rewriteReactor(binary.EncodeModule(m))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRewriteReactor_notReusable(t *testing.T) {
	tests := []struct {
		name string
		edit func(*wabin.Module)
	}{
		{"table.set in a function", func(m *wabin.Module) {
			m.CodeSection[0].Body = []byte{0x41, 0x00, 0xD0, 0x70, 0x26, 0x00, 0x0B}
		}},
		{"no fd_prestat_get to check descriptors with", func(m *wabin.Module) {
			m.ImportSection[1].Name = "fd_close"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := reactorFixture()
			tc.edit(m)
			rm, err := rewriteReactor(binary.EncodeModule(m))
			if err != nil || rm.reusable {
				t.Fatalf("reusable %v err %v, want a module that is not reused", rm != nil && rm.reusable, err)
			}
		})
	}
}

func TestExportNames(t *testing.T) {
	tests := []struct {
		name    string
		code    []byte
		reactor bool
		err     bool
	}{
		{"reactor", binary.EncodeModule(reactorFixture()), true, false},
		{"command", func() []byte {
			m := reactorFixture()
			m.ExportSection = append(m.ExportSection, &wabin.Export{Type: wabin.ExternTypeFunc, Name: "_start", Index: 2})
			return binary.EncodeModule(m)
		}(), false, false},
		{"not wasm", []byte("hello world"), false, true},
		{"truncated section", []byte("\x00asm\x01\x00\x00\x00\x07\x10\x01"), false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := exportNames(tc.code)
			if (err != nil) != tc.err || isReactor(tc.code) != tc.reactor {
				t.Fatalf("err %v reactor %v", err, isReactor(tc.code))
			}
		})
	}
}
