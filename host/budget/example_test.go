package budget_test

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/host/budget"
)

// A root call makes one budget; every call it sets off takes a slot
// from it, and the budget's count of calls in all runs out.
func Example() {
	ctx, cancel := budget.With(context.Background(), budget.New(budget.Limits{InFlight: 2, Calls: 3}))
	defer cancel()
	b := budget.From(ctx)
	for i := range 4 {
		slot, err := b.Acquire(ctx)
		if err != nil {
			fmt.Println(i, err.Code, err.Message)
			continue
		}
		slot.Release()
		slot.Release() // a second release gives nothing back twice
		fmt.Println(i, "ran")
	}
	// Output:
	// 0 ran
	// 1 ran
	// 2 ran
	// 3 TOOL_ERROR the call's budget of 3 calls in all is spent
}

// A tenant's places shared by a root call's budget: the root holds one
// place and lends it to its first inner call, so that with one place in
// all the inner call still runs; a second inner call at once waits for a
// place (here, until its context ends).
func ExampleBudget_Share() {
	places := budget.NewPlaces(1)
	places.TryAcquire() // the root call's own place
	b := budget.New(budget.Limits{})
	b.Share(places)
	inner, err := b.Acquire(context.Background())
	fmt.Println(err == nil, places.InUse())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.Acquire(ctx)
	fmt.Println(err.Code)
	inner.Release()
	again, err := b.Acquire(context.Background())
	fmt.Println(err == nil)
	again.Release()
	// Output:
	// true 1
	// CANCELLED
	// true
}
