package wasm

import "github.com/tetratelabs/wazero"

// importsTools reports whether a compiled module imports agenthost_tools.call.
func importsTools(mod wazero.CompiledModule) bool {
	for _, f := range mod.ImportedFunctions() {
		if m, n, ok := f.Import(); ok && m == ToolModule && n == ToolFunc {
			return true
		}
	}
	return false
}

// CallsTools reports whether the tool's module imports agenthost_tools.call: the
// host then runs it with a ToolCaller (a code tool).
func (p *prepared) CallsTools() bool { return p.callsTools }
