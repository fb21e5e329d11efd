package wasm_test

import (
	"testing"

	"github.com/agenthost/agenthost/host/runner"
)

func TestParked_smoke(t *testing.T) {
	e := newEnv(t)
	r := newPoolRunner(t, 64<<20)
	p := prepare(t, r, goGuest(t, "goecho"), e, nil)
	for i := range 50 {
		res := run(t, p, `{"i":1}`)
		if res.Err != nil || string(res.Output) != `{"i":1}` {
			t.Fatalf("call %d: %+v %q", i, res.Err, res.Output)
		}
	}
	t.Logf("%+v", p.(runner.Statser).PoolStats())
}

func TestParked_probeStats(t *testing.T) {
	e := newEnv(t)
	r := newPoolRunner(t, 64<<20)
	p := prepare(t, r, goGuest(t, "goprobe"), e, nil)
	for i := range 50 {
		res := run(t, p, `{"ops":[{"op":"now"},{"op":"args"}]}`)
		if res.Err != nil {
			t.Fatalf("call %d: %+v %q", i, res.Err, res.Output)
		}
	}
	t.Logf("%+v", p.(runner.Statser).PoolStats())
}
