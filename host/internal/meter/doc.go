// Package meter makes WebAssembly guests stoppable and their CPU use
// countable: deterministic fuel metering and cheap interruption.
//
// [Instrument] rewrites a module at load time so that every segment of
// straight-line code charges its instruction count against a counter
// (kept in a local of each function, synchronised with a mutable i64
// global at calls and exits) and calls the host when the counter is found
// below zero at a check (function entry, loop header, call through an
// import or a table, exit). The host function ([NewHostModule], or [HostFuncs] for SDKs that
// register their own host modules) reads the call's [Budget] from the
// context: it traps with FUEL_EXHAUSTED when the fuel is spent, with
// TIMEOUT when the context is done, and otherwise hands the guest the next
// slice of units.
//
// Cost model (metering [Version] "1"): one unit per instruction executed,
// where block, loop, if, br, br_if, br_table, return, call,
// call_indirect and every other instruction count one, and the structural
// else and end count nothing. A call to an import (WASI, Extism kernel,
// host functions) costs one unit, the call itself; the work behind it is
// bounded by the timeout, not metered. Bulk memory instructions cost one
// unit whatever their length. Charges are made on entry to a segment, so
// a trap in the middle of a segment has been charged for the whole
// segment; the count stays deterministic.
//
// Per call, a runner does:
//
//	b := &meter.Budget{Fuel: grant.Limits.Fuel}
//	ctx = meter.WithBudget(ctx, b)           // ctx carries the deadline
//	... run the guest with ctx ...
//	if e := b.Err(); e != nil { /* FUEL_EXHAUSTED or TIMEOUT */ }
//	usage.Fuel = b.Used()
//
// [Cache] memoizes [Instrument] in memory and on disk. [Nanosleep] makes
// guest sleeps end at the deadline, and [DeterministicConfig] gives a
// guest a fixed clock and seeded randomness so its fuel replays exactly.
// docs/design/FUEL.md has the design notes and the benchmark figures.
package meter
