// Package wasm runs wasi-command tools on wazero.
//
// A [Runner] owns one wazero runtime (optimizing compiler, optional
// on-disk compilation cache) and compiles each distinct module once,
// keyed by its SHA-256. [Runner.Prepare] checks the tool and its grant
// and returns a runner.Prepared whose Run gives every call a fresh
// instance:
//
//   - the arguments JSON on stdin, argv = [tool id, "--key=value" for
//     each config entry in key order], an environment of only the granted
//     variables;
//   - /workspace, /tool (read-only), /cache, a per-call /tmp and the
//     grant's extra mounts, each a sandboxfs checking the glob rules file
//     by file, with everything else under "/" refused;
//   - a wall-clock timeout covering instantiation and run (also inside
//     sleeps), a per-call memory cap, a stdout cap, and stderr collected
//     as log lines under 64 KiB.
//
// A tool built as a reactor (exports _initialize, agenthost_init and
// agenthost_call, as the guest SDK's -buildmode=c-shared builds do) takes
// the fast path: its start-up runs once at Prepare, and every call starts
// from a snapshot of that state, on a pooled instance reset after each
// call or on a fresh instance (snapshot.go, reuse.go, pool.go;
// docs/POOLS.md). Options.PoolMemoryBytes bounds the pools.
//
// See docs/RUNNER.md for how each error code is detected.
package wasm
