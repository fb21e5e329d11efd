// Package toolpack finds the first-party plugins that the manifests under a
// toolpacks folder refer to, and builds them for GOOS=wasip1 GOARCH=wasm.
//
// The manifests are the build list: a manifest whose handler is a wasm
// module "<name>.wasm" is built from plugins/<name> into the manifest's
// folder with -buildmode=c-shared, a reactor: for abi "extism" its
// exports are the entry points, and for abi "wasi-command" the guest SDK
// exports agenthost_init and agenthost_call, the runner's pre-initialised
// fast path (docs/POOLS.md). Plugin folders that no manifest refers to are reported, so no
// tool is left unshipped by mistake; a manifest whose module has no plugin
// folder is a third-party module and is left alone.
package toolpack
