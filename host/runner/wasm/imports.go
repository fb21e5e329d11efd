package wasm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tetratelabs/wabin/leb128"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// checkImports refuses a module that imports anything the runner does not
// provide, naming each such import. wazero would refuse it only when an
// instance is made, as "module[env] not instantiated" or "not exported",
// which tells an author neither which function is missing nor what to
// build instead. provided holds the functions of the runner's
// wasi_snapshot_preview1 module.
func checkImports(code []byte, provided map[string]bool) error {
	imports, err := importNames(code)
	if err != nil {
		return nil // not a module this reader understands: the compiler says why
	}
	var missing []string
	hint := ""
	for _, im := range imports {
		if im.module == wasi_snapshot_preview1.ModuleName && im.kind == 0 && provided[im.name] {
			continue
		}
		if im.module == ToolModule && im.name == ToolFunc && im.kind == 0 {
			continue // tools as functions (toolcall.go)
		}
		missing = append(missing, im.module+"."+im.name)
		switch {
		case im.module == wasi_snapshot_preview1.ModuleName:
			hint = "the WASI preview 1 functions this host provides are " + strings.Join(sortedKeys(provided), ", ")
		case im.module == "wasi_unstable":
			hint = "wasi_unstable is WASI preview 0: rebuild with a current toolchain for wasm32-wasip1"
		case strings.HasPrefix(im.module, "wasi:"):
			hint = "wasi:… interfaces are WASI preview 2 (the component model): build a core module for wasm32-wasip1"
		case strings.HasPrefix(im.module, "extism:"):
			hint = `this is an Extism plugin: set handler.abi to "extism" and handler.entryPoint to its exported function`
		case hint == "":
			hint = "a wasi-command module may import only wasi_snapshot_preview1 functions"
		}
	}
	if len(missing) == 0 {
		return nil
	}
	what := strings.Join(missing, ", ")
	if len(missing) > 5 {
		what = fmt.Sprintf("%s and %d more", strings.Join(missing[:5], ", "), len(missing)-5)
	}
	return fmt.Errorf("module imports %s, which this host does not provide (%s)", what, hint)
}

// checkImports is checkImports against the functions of r's own
// wasi_snapshot_preview1 module, so the check can never disagree with
// what an instance gets.
func (r *Runner) checkImports(code []byte) error {
	wasi := r.rt.Module(wasi_snapshot_preview1.ModuleName)
	if wasi == nil {
		return nil // a closed runner: Prepare fails on its own
	}
	provided := map[string]bool{}
	for name := range wasi.ExportedFunctionDefinitions() {
		provided[name] = true
	}
	return checkImports(code, provided)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// wasmImport is one entry of a module's import section; kind 0 is a
// function.
type wasmImport struct {
	module, name string
	kind         byte
}

// importNames returns a core module's imports, reading the section
// headers and the import section only.
func importNames(code []byte) ([]wasmImport, error) {
	sec, err := section(code, 2) // the import section
	if err != nil || sec == nil {
		return nil, err
	}
	return readImports(sec)
}

// section returns the payload of a module's first section with this id
// (nil when it has none), reading only the section headers before it.
func section(code []byte, id byte) (*bytes.Reader, error) {
	if len(code) < 8 || string(code[:8]) != "\x00asm\x01\x00\x00\x00" {
		return nil, errors.New("not a wasm binary module")
	}
	r := bytes.NewReader(code[8:])
	for r.Len() > 0 {
		got, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		size, _, err := leb128.DecodeUint32(r)
		if err != nil || uint64(size) > uint64(r.Len()) {
			return nil, errors.New("truncated section")
		}
		if got == id {
			off := len(code) - r.Len()
			return bytes.NewReader(code[off : off+int(size)]), nil
		}
		if _, err := r.Seek(int64(size), io.SeekCurrent); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func readImports(sec *bytes.Reader) ([]wasmImport, error) {
	name := func() (string, error) {
		l, _, err := leb128.DecodeUint32(sec)
		if err != nil || uint64(l) > uint64(sec.Len()) {
			return "", errors.New("truncated import name")
		}
		b := make([]byte, l)
		_, _ = sec.Read(b)
		return string(b), nil
	}
	limits := func() error {
		flags, err := sec.ReadByte()
		if err != nil {
			return err
		}
		if _, _, err := leb128.DecodeUint64(sec); err != nil {
			return err
		}
		if flags&1 != 0 {
			_, _, err = leb128.DecodeUint64(sec)
		}
		return err
	}
	n, _, err := leb128.DecodeUint32(sec)
	if err != nil || uint64(n) > uint64(sec.Len()) {
		return nil, errors.New("truncated import section")
	}
	out := make([]wasmImport, 0, n)
	for range n {
		var im wasmImport
		if im.module, err = name(); err != nil {
			return nil, err
		}
		if im.name, err = name(); err != nil {
			return nil, err
		}
		if im.kind, err = sec.ReadByte(); err != nil {
			return nil, err
		}
		switch im.kind {
		case 0: // function: a type index
			_, _, err = leb128.DecodeUint32(sec)
		case 1: // table: a reference type, then limits
			if _, err = sec.ReadByte(); err == nil {
				err = limits()
			}
		case 2: // memory: limits
			err = limits()
		case 3: // global: a value type and mutability
			if _, err = sec.ReadByte(); err == nil {
				_, err = sec.ReadByte()
			}
		case 4: // tag: an attribute and a type index
			if _, err = sec.ReadByte(); err == nil {
				_, _, err = leb128.DecodeUint32(sec)
			}
		default:
			return nil, fmt.Errorf("import kind %d", im.kind)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	return out, nil
}
