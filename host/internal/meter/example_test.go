package meter_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/tetratelabs/wazero"
)

// Example meters a call of count(100), which executes 9×100+7
// instructions, then runs it again with too little fuel.
func Example() {
	ctx := context.Background()
	wasm, err := os.ReadFile("testdata/wat/count.wasm")
	if err != nil {
		fmt.Println(err)
		return
	}
	metered, err := meter.NewCache("", nil).Instrument(wasm)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if err := meter.NewHostModule(ctx, r); err != nil {
		fmt.Println(err)
		return
	}
	compiled, err := r.CompileModule(ctx, metered)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, fuel := range []uint64{0, 500} {
		b := &meter.Budget{Fuel: fuel}
		mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := mod.ExportedFunction("count").Call(meter.WithBudget(ctx, b), 100)
		if e := meter.ErrorOf(err); e != nil {
			fmt.Printf("fuel %d: %s, used %d\n", fuel, e.Code, b.Used())
		} else {
			fmt.Printf("fuel %d: count = %d, used %d\n", fuel, res[0], b.Used())
		}
		_ = mod.Close(ctx)
	}
	// Output:
	// fuel 0: count = 100, used 907
	// fuel 500: FUEL_EXHAUSTED, used 500
}
