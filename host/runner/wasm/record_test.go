package wasm_test

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// recordGuest is the recording test guest in mode.
func recordGuest(t testing.TB, mode string) string {
	return sdkGuest(t, "testdata/reactor/record", mode)
}

// replay runs input again on p from rec.
func replay(t testing.TB, p runner.Prepared, input string, rec *runner.Recorded) runner.Result {
	t.Helper()
	res, err := p.Run(context.Background(), runner.Request{Input: []byte(input), Replay: rec})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return res
}

// TestRecordReplay: a guest that reads the clocks and random bytes (at
// its start-up and in the call) answers differently on every call, and
// exactly the same, fuel included, when a call is replayed from its
// record: on the same prepared tool, and on a new runner that never ran
// the tool. Every way a call can run is covered: a command from _start,
// a parked command, a reactor's fresh instance and its pooled one.
func TestRecordReplay(t *testing.T) {
	cases := []struct {
		name   string
		mode   string
		budget uint64
		pooled bool
	}{
		{"command", modeCommand, 0, false},
		{"parked command", modeCommand, 256 << 20, true},
		{"reactor", modeReactor, 0, false},
		{"pooled reactor", modeReactor, 256 << 20, true},
	}
	edit := func(g *policy.Grant) { g.Limits.Fuel = 1 << 40 }
	const input = `{"n":7}`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			module := recordGuest(t, tc.mode)
			p := prepare(t, newPoolRunner(t, tc.budget), module, e, edit)
			var calls []runner.Result
			for range 4 {
				res := run(t, p, input)
				if res.Err != nil {
					t.Fatalf("call: %v %v", res.Err, res.Logs)
				}
				if res.Recorded == nil || res.Recorded.NotReplayable != "" || len(res.Recorded.Call.Seed) != 32 {
					t.Fatalf("record: %+v", res.Recorded)
				}
				calls = append(calls, res)
			}
			if tc.pooled {
				if st := p.(runner.Statser).PoolStats(); st.Hits == 0 {
					t.Fatalf("no call ran on a pooled instance: %+v", st)
				}
			}
			a, b := calls[len(calls)-2], calls[len(calls)-1]
			if string(a.Output) == string(b.Output) {
				t.Fatalf("two calls answered the same: %s", a.Output)
			}
			if (a.Recorded.Startup != nil) != (tc.mode == modeReactor || tc.pooled) {
				t.Fatalf("start-up recorded: %t", a.Recorded.Startup != nil)
			}
			other := prepare(t, newRunner(t), module, e, edit)
			for _, c := range []runner.Result{a, b} {
				for name, q := range map[string]runner.Prepared{"same tool": p, "new runner": other} {
					got := replay(t, q, input, c.Recorded)
					if got.Err != nil || string(got.Output) != string(c.Output) {
						t.Fatalf("%s: replay answered %s (%v), the call %s", name, got.Output, got.Err, c.Output)
					}
					if got.Recorded == nil || got.Recorded.NotReplayable != "" {
						t.Fatalf("%s: replay diverged: %+v", name, got.Recorded)
					}
					if !tc.pooled || tc.mode == modeReactor {
						// A parked command's call began with the retry of
						// an interrupted read, which a replay from _start
						// does not make: its fuel differs by that.
						if *got.Usage.Fuel != *c.Usage.Fuel {
							t.Fatalf("%s: replay used %d fuel, the call %d", name, *got.Usage.Fuel, *c.Usage.Fuel)
						}
					}
				}
			}
			// Another seed, another start-up: another answer.
			tampered := *a.Recorded
			tampered.Call.Seed = append([]byte(nil), a.Recorded.Call.Seed...)
			tampered.Call.Seed[0] ^= 1
			if got := replay(t, p, input, &tampered); string(got.Output) == string(a.Output) {
				t.Fatalf("a replay with another seed answered the same: %s", got.Output)
			}
			if a.Recorded.Startup != nil {
				tampered := *a.Recorded
				s := *a.Recorded.Startup
				s.Wall += int64(time.Hour)
				tampered.Startup = &s
				if got := replay(t, p, input, &tampered); string(got.Output) == string(a.Output) {
					t.Fatalf("a replay from another start-up answered the same: %s", got.Output)
				}
			}
		})
	}
}

// TestRecordBounded: a guest reading the clock more often than a record
// holds still runs, and its record says the call cannot be replayed.
func TestRecordBounded(t *testing.T) {
	p := prepare(t, newRunner(t), recordGuest(t, modeCommand), newEnv(t), nil)
	res := run(t, p, `{"reads":5000}`)
	if res.Err != nil || res.Recorded == nil || res.Recorded.NotReplayable == "" || len(res.Recorded.Call.Clock) != 4096 {
		t.Fatalf("err %v, record %v", res.Err, res.Recorded)
	}
	got := replay(t, p, `{"reads":5000}`, res.Recorded)
	if got.Err == nil || got.Err.Code != abi.CodeInvalidArguments {
		t.Fatalf("replay of an unreplayable call: %v", got.Err)
	}
}

// TestReplayRefused: a record that does not fit the tool or is not
// well formed is refused with INVALID_ARGUMENTS, before any guest code
// runs.
func TestReplayRefused(t *testing.T) {
	e := newEnv(t)
	r := newRunner(t)
	command := prepare(t, r, recordGuest(t, modeCommand), e, nil)
	reactor := prepare(t, r, recordGuest(t, modeReactor), e, nil)
	rec := run(t, command, `{}`).Recorded
	fromSnapshot := run(t, reactor, `{}`).Recorded
	edit := func(f func(*runner.Recorded)) *runner.Recorded {
		c := *rec
		c.Call.Clock = append([]int64(nil), rec.Call.Clock...)
		f(&c)
		return &c
	}
	cases := []struct {
		name string
		p    runner.Prepared
		rec  *runner.Recorded
	}{
		{"another runner", command, edit(func(c *runner.Recorded) { c.Runner = "extism" })},
		{"not replayable", command, edit(func(c *runner.Recorded) { c.NotReplayable = "too many readings" })},
		{"short seed", command, edit(func(c *runner.Recorded) { c.Call.Seed = c.Call.Seed[:8] })},
		{"clock going back", command, edit(func(c *runner.Recorded) { c.Call.Clock = append(c.Call.Clock, -5) })},
		{"too many readings", command, edit(func(c *runner.Recorded) { c.Call.Clock = make([]int64, 5000) })},
		{"deterministic", command, edit(func(c *runner.Recorded) { c.Deterministic = true })},
		{"no start-up for a snapshot", reactor, rec},
		{"bad start-up seed", reactor, func() *runner.Recorded {
			c := *fromSnapshot
			s := *c.Startup
			s.Seed = s.Seed[:5]
			c.Startup = &s
			return &c
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := replay(t, tc.p, `{}`, tc.rec)
			if got.Err == nil || got.Err.Code != abi.CodeInvalidArguments {
				t.Fatalf("got %v %s", got.Err, got.Output)
			}
		})
	}
}

// TestReplayDiverged: a replay whose guest reads the clock or random
// bytes other than the record says (here: a record with its seed and a
// clock reading removed) runs, and its record says how it strayed.
func TestReplayDiverged(t *testing.T) {
	p := prepare(t, newRunner(t), recordGuest(t, modeCommand), newEnv(t), nil)
	rec := run(t, p, `{}`).Recorded
	for name, edit := range map[string]func(*runner.Recorded){
		"no seed":        func(c *runner.Recorded) { c.Call.Seed = nil },
		"a reading less": func(c *runner.Recorded) { c.Call.Clock = c.Call.Clock[:len(c.Call.Clock)-1] },
	} {
		t.Run(name, func(t *testing.T) {
			c := *rec
			edit(&c)
			got := replay(t, p, `{}`, &c)
			if got.Err != nil || got.Recorded == nil || got.Recorded.NotReplayable == "" {
				t.Fatalf("err %v, record %+v", got.Err, got.Recorded)
			}
		})
	}
}

// TestRecordDeterministic: a deterministic tool's record says only that,
// and its replay answers the same.
func TestRecordDeterministic(t *testing.T) {
	p := prepare(t, newRunner(t), recordGuest(t, modeReactor), newEnv(t), func(g *policy.Grant) { g.Limits.Deterministic = true })
	a := run(t, p, `{}`)
	if a.Err != nil || a.Recorded == nil || !a.Recorded.Deterministic || a.Recorded.Call.Seed != nil {
		t.Fatalf("err %v record %+v", a.Err, a.Recorded)
	}
	if got := replay(t, p, `{}`, a.Recorded); got.Err != nil || string(got.Output) != string(a.Output) {
		t.Fatalf("replay %s %v, call %s", got.Output, got.Err, a.Output)
	}
}
