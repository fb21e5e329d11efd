// Package extism runs tools whose handler is {"type": "wasm", "abi":
// "extism"}: plugins built with any Extism PDK, unmodified.
//
// The runner hosts the Extism ABI itself on wazero rather than through
// go-sdk's Plugin type, for three reasons documented in docs/ABI.md
// ("## extism"): go-sdk's extism:host/env module is built inside
// NewCompiledPlugin and cannot be replaced, so its http_request (hostname
// globs only, redirects followed unchecked, no address rules) would be
// reachable; its log functions obey a process-global level; and each
// kernel call looks up exports by name, which doubles the cost of a call.
// Here extism:host/env is defined by this package, its kernel memory is a
// Go data structure, and http_request goes through host/internal/netguard.
//
// Per call ([runner.Prepared].Run):
//   - a fresh instance (vars, kernel memory and guest state start empty);
//     the runtime initialiser go-sdk would call (_initialize, hs_init,
//     __wasm_call_ctors) runs first;
//   - input = the arguments JSON, output = the bytes set by output_set;
//   - config = grant.Config (handler.config overlaid by the policy's
//     per-tool config);
//   - log_debug .. log_error and the plugin's stdout/stderr go to
//     Result.Logs (64 KiB in all); log_trace is dropped;
//   - error_set, a non-zero return code, a trap or a non-zero WASI exit
//     give TOOL_ERROR with the plugin's message when it set one;
//   - the timeout, memory cap (linear memory plus kernel memory), output
//     cap and fuel give TIMEOUT, MEMORY_LIMIT, OUTPUT_LIMIT and
//     FUEL_EXHAUSTED; modules are instrumented by host/internal/meter,
//     which stops a guest at its deadline without wazero's costly
//     WithCloseOnContextDone;
//   - the file system of a wasi-command tool under the same grant
//     (/workspace, /tool, /cache, /tmp and mounts, checked file by file by
//     host/internal/sandboxfs); a refused access that fails the call is
//     PERMISSION_DENIED.
package extism
