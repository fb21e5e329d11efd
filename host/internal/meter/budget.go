package meter

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// DefaultSlice is the number of units the host hands the guest counter at
// a time when Budget.Slice is zero. At the roughly 1–2 units per
// nanosecond of wazero's optimizing compiler it is about 5–10 ms of work,
// which bounds how late a deadline is noticed, while keeping refills (a
// host call each) rare.
const DefaultSlice = 10_000_000

// Budget is the fuel and deadline state of one call. Create one per call
// with the call's limits, attach it to the call's context with
// WithBudget, and read Used and Err when the call returns. A Budget is
// used by one call at a time; it is not safe for concurrent use.
//
// The deadline is the context's: the refill import traps with TIMEOUT
// once the context passed to the guest call is done.
type Budget struct {
	// Fuel is the number of instructions the call may execute; 0 means
	// unlimited (only the deadline is enforced).
	Fuel uint64
	// Slice is the number of units handed to the guest per refill; 0
	// means DefaultSlice. It changes how often the host is asked, never
	// the fuel used nor where a fuel limit stops the guest.
	Slice uint64

	granted   uint64     // units handed to the guest counter so far
	counter   api.Global // the guest's counter, captured on the first refill
	settled   bool       // remaining was reported by the settle export
	remaining int64
	trapped   *abi.Error
	used      uint64 // fixed when trapped
}

type budgetKey struct{}

// WithBudget returns a context carrying b for the meter's host functions.
// Pass it to the guest call (InstantiateModule for a WASI command, the
// exported function call otherwise).
func WithBudget(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

func budgetFrom(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}

// Used returns the fuel the call used: the number of instructions
// charged. It is exact and independent of Slice. After a FUEL_EXHAUSTED
// trap it is Fuel.
//
// Used reads the guest counter, so it needs either a runtime set up with
// NewHostModule (the counter is captured on the first refill) or a call
// of the SettleExport function after the guest call.
func (b *Budget) Used() uint64 {
	if b.trapped != nil {
		return b.used
	}
	remaining := b.remaining
	if !b.settled && b.counter != nil {
		remaining = int64(b.counter.Get())
	}
	return b.granted - uint64(remaining)
}

// Err returns the trap the meter raised during the call (code
// FUEL_EXHAUSTED or TIMEOUT), or nil. Unlike ErrorOf it does not depend
// on how the runtime wrapped the trap.
func (b *Budget) Err() *abi.Error { return b.trapped }

// refill is called by the guest with its counter when it went below zero.
// It traps on a done context or a spent budget, and otherwise returns the
// next slice.
func (b *Budget) refill(ctx context.Context, counter int64) (int64, error) {
	if b.trapped != nil {
		return 0, b.trapped
	}
	charged := b.granted - uint64(counter) // counter = granted - charged
	if err := ctx.Err(); err != nil {
		b.used = charged
		if errors.Is(err, context.DeadlineExceeded) {
			b.trapped = abi.Errorf(abi.CodeTimeout, "time limit exceeded after %d instructions", charged)
		} else {
			b.trapped = abi.Errorf(abi.CodeTimeout, "call cancelled after %d instructions", charged)
		}
		return 0, b.trapped
	}
	if b.Fuel > 0 && charged > b.Fuel {
		b.used = b.Fuel
		b.trapped = abi.Errorf(abi.CodeFuelExhausted, "fuel limit of %d instructions exhausted", b.Fuel)
		return 0, b.trapped
	}
	grant := b.Slice
	if grant == 0 {
		grant = DefaultSlice
	}
	if b.Fuel > 0 && b.Fuel-charged < grant {
		grant = b.Fuel - charged
	}
	b.granted = charged + grant
	return int64(grant), nil
}

// trap is the panic value of the meter's host functions; wazero keeps it
// in the error chain of the failed call.
type trap struct{ err *abi.Error }

func (t *trap) Error() string { return "agenthost meter: " + t.err.Error() }
func (t *trap) Unwrap() error { return t.err }

// errNoBudget traps a metered guest called without WithBudget: running it
// unmetered would silently lift the limits.
var errNoBudget = errors.New("agenthost meter: metered module called without a budget in the context")

func refillFunc(ctx context.Context, mod api.Module, stack []uint64) {
	b := budgetFrom(ctx)
	if b == nil {
		panic(errNoBudget)
	}
	if b.counter == nil && mod != nil {
		b.counter = mod.ExportedGlobal(CounterExport)
	}
	next, err := b.refill(ctx, int64(stack[0]))
	if err != nil {
		panic(&trap{err: b.trapped})
	}
	stack[0] = uint64(next)
}

func settleFunc(ctx context.Context, _ api.Module, stack []uint64) {
	b := budgetFrom(ctx)
	if b == nil {
		panic(errNoBudget)
	}
	b.settled, b.remaining = true, int64(stack[0])
}

// HostFunc is one function of the ImportModule namespace, in a shape any
// wazero-based SDK can register (the Extism SDK's
// NewHostFunctionWithStack takes exactly these parts).
type HostFunc struct {
	Name    string          // RefillName or SettleName
	Params  []api.ValueType // parameter types
	Results []api.ValueType // result types
	Func    api.GoFunc      // the implementation; reads the Budget from ctx
}

// HostFuncs returns the functions an instrumented module imports from
// ImportModule. They do not see the calling module, so with them Used
// needs a SettleExport call after each guest call; NewHostModule is the
// better choice on a plain wazero runtime.
func HostFuncs() []HostFunc {
	i64 := []api.ValueType{api.ValueTypeI64}
	return []HostFunc{
		{Name: RefillName, Params: i64, Results: i64, Func: func(ctx context.Context, stack []uint64) { refillFunc(ctx, nil, stack) }},
		{Name: SettleName, Params: i64, Func: func(ctx context.Context, stack []uint64) { settleFunc(ctx, nil, stack) }},
	}
}

// NewHostModule instantiates the ImportModule host module in r. Call it
// once per runtime, before instantiating instrumented modules.
func NewHostModule(ctx context.Context, r wazero.Runtime) error {
	i64 := []api.ValueType{api.ValueTypeI64}
	_, err := r.NewHostModuleBuilder(ImportModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(refillFunc), i64, i64).Export(RefillName).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(settleFunc), i64, nil).Export(SettleName).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("instantiate meter host module: %w", err)
	}
	return nil
}

// ErrorOf returns the FUEL_EXHAUSTED or TIMEOUT error when err is (or
// wraps) a trap raised by the meter, and nil otherwise.
func ErrorOf(err error) *abi.Error {
	var t *trap
	if errors.As(err, &t) {
		return t.err
	}
	return nil
}
