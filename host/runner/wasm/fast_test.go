package wasm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/host/runner/wasm"
)

func TestFastPath_smoke(t *testing.T) {
	r := newPoolRunner(t, 64<<20)
	e := newEnv(t)
	p := prepare(t, r, probeGuest(t, modeReactor), e, nil)
	if !wasm.IsFast(p) {
		t.Fatal("reactor not on the fast path")
	}
	for i := 0; i < 3; i++ {
		res := run(t, p, `{"op":"echo"}`)
		if res.Err != nil {
			t.Fatalf("%v %q", res.Err, res.Logs)
		}
		var o struct{ Calls int }
		if err := json.Unmarshal(res.Output, &o); err != nil || o.Calls != 1 {
			t.Fatalf("output %s: %v", res.Output, err)
		}
	}
	_ = context.Background()
}
