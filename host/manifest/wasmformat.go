package manifest

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// The first 8 bytes of a WebAssembly binary: the magic "\0asm", then a
// 16-bit version and a 16-bit layer. A core module is version 1, layer 0;
// a component (the component model, WASI preview 2) is layer 1.
var (
	wasmMagic     = []byte("\x00asm")
	coreVersion   = []byte{0x01, 0x00, 0x00, 0x00}
	componentLyr1 = []byte{0x01, 0x00}
)

// ComponentAdvice says how to build a core module instead of a component,
// for each toolchain that makes components by default or on request.
const ComponentAdvice = "agenthost runs core WebAssembly modules (WASI preview 1 commands and Extism plugins); " +
	"build a core module from the same code: Rust `cargo build --target wasm32-wasip1` (not wasm32-wasip2 or cargo component), " +
	"Go `GOOS=wasip1 GOARCH=wasm go build` or `tinygo build -target=wasip1` (not -target=wasip2), " +
	"C `clang --target=wasm32-wasi` (not wasm32-wasip2), " +
	"JavaScript the Extism JS PDK (not jco componentize), Python a script tool (not componentize-py)"

// checkWasmFormat refuses a file that is a WebAssembly component rather
// than a core module. wazero would refuse it too, but only at compile time
// and as "invalid version header", which tells an author neither what the
// file is nor what to build instead. A file that is not WebAssembly at
// all is left to the runner, which says so when it compiles it.
func checkWasmFormat(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	var head [8]byte
	if _, err := io.ReadFull(f, head[:]); err != nil || !bytes.Equal(head[:4], wasmMagic) || bytes.Equal(head[4:], coreVersion) {
		return nil
	}
	if bytes.Equal(head[6:], componentLyr1) {
		return fmt.Errorf("is a WebAssembly component (component-model binary, version %#x, layer 1), not a core module: %s",
			uint16(head[4])|uint16(head[5])<<8, ComponentAdvice)
	}
	return fmt.Errorf("is a WebAssembly binary of version %#x, layer %d; only core modules of version 1 run: %s",
		uint16(head[4])|uint16(head[5])<<8, uint16(head[6])|uint16(head[7])<<8, ComponentAdvice)
}
