package wasm

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname of the monotonic clock

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/wasiguard"
	"github.com/agenthost/agenthost/host/runner"
)

// Recording (docs/REPLAY.md). What a guest sees that neither its module,
// its grant nor its arguments determine is its random bytes and its clock
// readings. Every stretch of guest code (a call; the start-up a snapshot
// or a parked instance was taken after) runs with a recorder: random_get
// reads a ChaCha8 stream keyed by a 32-byte seed drawn from the system's
// generator at the stretch's first random_get, and each clock
// reading is the real clock, noted as the time elapsed since the previous
// one. Given the seed and the readings back (runner.Request.Replay), a
// replay feeds the guest the same bytes and the same readings in the same
// order, so the guest runs the same instructions.

// runtimeNanotime is the monotonic clock wazero's WithSysNanotime
// reads: a recorded call keeps the clock a snapshot's start-up saw, which
// the guest's runtime expects never to go back.
//
//go:linkname runtimeNanotime runtime.nanotime
func runtimeNanotime() int64

// maxReadings bounds the clock readings recorded for one stretch of
// guest code: 4096 readings is about 30 KiB in a receipt. A guest that
// reads the clock more often still runs with the real clock, and its
// record says it cannot replay the call.
const maxReadings = 4096

// recorderName is Recorded.Runner for this runner.
const recorderName = "wasm"

// recorder feeds one stretch of guest code its clocks and random bytes,
// recording them, or, when replaying, serving recorded ones. A guest
// instance runs one thread, so its WASI calls never overlap.
type recorder struct {
	seed [32]byte
	// stream is made at the first random_get (most calls of a
	// pre-initialised guest read no random bytes: their runtime was
	// seeded at start-up), and only then is a seed drawn.
	stream     *rand.ChaCha8
	wall, mono int64
	last       int64   // elapsed nanoseconds at the last reading
	clock      []int64 // the readings, as deltas (runner.Inputs.Clock)
	over       bool    // readings past maxReadings went unrecorded
	replay     bool
	next       int  // readings served so far when replaying
	unseeded   bool // replaying a stretch that read no random bytes
	strayRand  bool // ... which the replay did
	// buf holds the first readings without an allocation of their own.
	buf [16]int64
}

// newRecorder starts recording at the current time (its seed is drawn at
// the first random_get).
func newRecorder() *recorder {
	r := &recorder{wall: time.Now().UnixNano(), mono: runtimeNanotime()}
	r.clock = r.buf[:0]
	return r
}

// replayer serves the recorded in.
func replayer(in *runner.Inputs) (*recorder, error) {
	if in.Seed != nil && len(in.Seed) != len(recorder{}.seed) {
		return nil, fmt.Errorf("the recorded seed has %d bytes, not %d", len(in.Seed), len(recorder{}.seed))
	}
	if len(in.Clock) > maxReadings {
		return nil, fmt.Errorf("the record holds %d clock readings, more than %d", len(in.Clock), maxReadings)
	}
	r := &recorder{wall: in.Wall, mono: in.Mono, clock: in.Clock, replay: true}
	for _, d := range in.Clock {
		if d < 0 {
			return nil, errors.New("the record holds a clock that goes back")
		}
	}
	copy(r.seed[:], in.Seed)
	r.unseeded = in.Seed == nil
	return r, nil
}

// elapsed is one clock reading: the nanoseconds since the start.
func (r *recorder) elapsed() int64 {
	if r.replay {
		if r.next < len(r.clock) {
			r.last += r.clock[r.next]
		} else {
			// Past the record: the replay has diverged (divergence
			// says so); the clock still advances.
			r.last += int64(time.Microsecond)
		}
		r.next++
		return r.last
	}
	e := max(runtimeNanotime()-r.mono, r.last)
	if len(r.clock) < maxReadings {
		r.clock = append(r.clock, e-r.last)
	} else {
		r.over = true
	}
	r.last = e
	return e
}

// walltime is the guest's wall clock (sys.Walltime).
func (r *recorder) walltime() (int64, int32) {
	t := r.wall + r.elapsed()
	return t / int64(time.Second), int32(t % int64(time.Second))
}

// nanotime is the guest's monotonic clock (sys.Nanotime).
func (r *recorder) nanotime() int64 { return r.mono + r.elapsed() }

// Read is random_get's source.
func (r *recorder) Read(p []byte) (int, error) {
	if r.stream == nil {
		switch {
		case r.unseeded:
			// The call read no random bytes: the replay has diverged
			// (divergence says so); it reads the zero seed's stream.
			r.strayRand = true
		case !r.replay:
			_, _ = crand.Read(r.seed[:]) // never fails (crypto/rand.Read)
		}
		r.stream = rand.NewChaCha8(r.seed)
	}
	return r.stream.Read(p)
}

// config is cfg with the recorder's clocks and random source, and, when
// replaying, sleeps that return at once (the readings are the recorded
// ones, so waiting would change nothing the guest sees).
func (r *recorder) config(cfg wazero.ModuleConfig) wazero.ModuleConfig {
	cfg = cfg.WithWalltime(r.walltime, sys.ClockResolution(time.Microsecond)).
		WithNanotime(r.nanotime, sys.ClockResolution(1)).
		WithRandSource(r)
	if r.replay {
		cfg = cfg.WithNanosleep(func(int64) {})
	}
	return cfg
}

// inputs is what the recorder recorded so far.
func (r *recorder) inputs() *runner.Inputs {
	in := &runner.Inputs{Wall: r.wall, Mono: r.mono, Clock: append([]int64(nil), r.clock...)}
	if r.stream != nil {
		in.Seed = append([]byte(nil), r.seed[:]...)
	}
	return in
}

// lost says why the record is not enough to replay ("" when it is).
func (r *recorder) lost(what string) string {
	if r.over {
		return fmt.Sprintf("the %s read the clock more than %d times", what, maxReadings)
	}
	return ""
}

// divergence says how a replay strayed from its record ("" when the guest
// read the clock exactly as often).
func (r *recorder) divergence(what string) string {
	if r.strayRand {
		return fmt.Sprintf("the replayed %s read random bytes, the recorded one none", what)
	}
	if r.next != len(r.clock) {
		return fmt.Sprintf("the replayed %s read the clock %d times, the recorded one %d", what, r.next, len(r.clock))
	}
	return ""
}

// recordOff turns recording off, for benchmarks that measure what it
// costs (SetRecording in the tests).
var recordOff atomic.Bool

// callRecorder is the recorder of one call of p: nil for a deterministic
// tool, whose clock and random stream are fixed already.
func (p *prepared) callRecorder() *recorder {
	if p.limits.Deterministic || recordOff.Load() {
		return nil
	}
	return newRecorder()
}

// recordedFresh is the record of a call that ran with rec on a fresh
// instance: from the tool's snapshot when it has one.
func (p *prepared) recordedFresh(rec *recorder) *runner.Recorded {
	if p.fast != nil {
		return p.recorded(rec, p.fast.startup, p.fast.startupLost)
	}
	return p.recorded(rec, nil, "")
}

// recordedSlot is the record of a call that ran with rec on the pooled
// instance s: from its own start-up for a parked command's, from the
// tool's snapshot for a reactor's.
func (p *prepared) recordedSlot(s *slot, rec *recorder) *runner.Recorded {
	if pk := s.park; pk != nil {
		return p.recorded(rec, pk.startup, pk.startupLost)
	}
	return p.recordedFresh(rec)
}

// recorded is the record of a call that ran with rec, from the start-up
// startup (nil: from the module's start).
func (p *prepared) recorded(rec *recorder, startup *runner.Inputs, startupLost string) *runner.Recorded {
	out := &runner.Recorded{Runner: recorderName}
	switch {
	case p.limits.Deterministic:
		out.Deterministic = true
		return out
	case rec == nil:
		return nil
	}
	out.Startup, out.Call = startup, *rec.inputs()
	out.NotReplayable = startupLost
	if l := rec.lost("call"); l != "" {
		out.NotReplayable = l
	}
	if p.callsTools {
		out.NotReplayable = "the call's program called other tools, whose answers are not recorded"
	}
	return out
}

// slotRand is a pooled instance's random source: the current call's
// recorder, or the system's between calls.
type slotRand struct{ io *slotIO }

// Read implements io.Reader.
func (s slotRand) Read(p []byte) (int, error) {
	if r := s.io.rec; r != nil {
		return r.Read(p)
	}
	return crand.Read(p)
}

// walltime is a pooled instance's wall clock: the current call's
// recorder's, or the real one between calls.
func (s *slotIO) walltime() (int64, int32) {
	if r := s.rec; r != nil {
		return r.walltime()
	}
	t := time.Now().UnixNano()
	return t / int64(time.Second), int32(t % int64(time.Second))
}

// nanotime is a pooled instance's monotonic clock.
func (s *slotIO) nanotime() int64 {
	if r := s.rec; r != nil {
		return r.nanotime()
	}
	return runtimeNanotime()
}

// slotConfig is cfg with a pooled instance's clocks and random source,
// which reach the recorder of the call (or start-up) it runs.
func (s *slotIO) config(cfg wazero.ModuleConfig) wazero.ModuleConfig {
	return cfg.WithWalltime(s.walltime, sys.ClockResolution(time.Microsecond)).
		WithNanotime(s.nanotime, sys.ClockResolution(1)).
		WithRandSource(slotRand{io: s})
}

// replayRun runs a call again from its record (runner.Request.Replay): on
// a fresh instance, never a pooled one, from the start-up replayed under
// its own record when the call ran from a snapshot or a parked instance.
func (p *prepared) replayRun(ctx context.Context, req runner.Request) (runner.Result, error) {
	rec := req.Replay
	refuse := func(format string, args ...any) (runner.Result, error) {
		return runner.Result{Err: abi.Errorf(abi.CodeInvalidArguments, "replay: "+format, args...)}, nil
	}
	switch {
	case rec.Runner != recorderName:
		return refuse("the call was recorded by runner %q, not %q", rec.Runner, recorderName)
	case rec.NotReplayable != "":
		return refuse("the record cannot replay the call: %s", rec.NotReplayable)
	case p.callsTools:
		return refuse("the tool's programs call other tools, whose answers are not recorded")
	case rec.Deterministic != p.limits.Deterministic:
		return refuse("the call was recorded with deterministic=%t, the tool now runs with deterministic=%t", rec.Deterministic, p.limits.Deterministic)
	case rec.Startup == nil && p.fast != nil && !p.limits.Deterministic:
		return refuse("the call ran from the module's start; this tool now starts from a snapshot")
	}
	var callRec, startRec *recorder
	if !p.limits.Deterministic {
		var err error
		if callRec, err = replayer(&rec.Call); err != nil {
			return refuse("%v", err)
		}
		if rec.Startup != nil {
			if startRec, err = replayer(rec.Startup); err != nil {
				return refuse("start-up: %v", err)
			}
		}
	}
	fp := p.fast
	if fp != nil && !p.limits.Deterministic {
		// The snapshot taken again under the recorded start-up.
		var err error
		if fp, _, err = p.snapshot(ctx, fp.rm, startRec); err != nil {
			return refuse("the start-up does not run again: %v", err)
		}
	}
	ctx, stop, release := callContext(ctx, p.limits.Timeout)
	defer release()
	c, err := p.newCall(stop)
	if err != nil {
		return runner.Result{}, fmt.Errorf("wasm replay %s: %w", p.toolID, err)
	}
	defer p.release(c)
	c.rec = callRec
	alloc := experimental.MemoryAllocator(c.memory)
	if fp != nil {
		alloc = &snapshotAllocator{cap: c.memory, pool: constantSource(fp.memory)}
	}
	ctx = experimental.WithMemoryAllocator(ctx, alloc)
	ctx = c.withBudget(ctx, p.limits.Fuel)
	cfg := p.moduleConfig(ctx, c, req.Input)
	if fp == nil && startRec != nil {
		// A parked command's call: its start-up up to the first read of
		// stdin, then the call.
		ph := &phase{startup: startRec, call: callRec}
		cfg = ph.config(cfg)
		ctx = wasiguard.WithHooks(ctx, ph)
	}
	var mod api.Module
	var runErr error
	if fp != nil {
		if mod, runErr = fp.instantiate(ctx, p, cfg); runErr == nil {
			runErr = fp.call(ctx, mod)
		}
	} else if mod, runErr = p.rt.InstantiateModule(ctx, p.compiled, cfg); runErr == nil {
		fn := mod.ExportedFunction("_start")
		if fn == nil {
			runErr = errors.New("module exports no _start")
		} else {
			_, runErr = fn.Call(ctx)
		}
	}
	stopped := context.Cause(ctx)
	if mod != nil {
		p.closeModule(mod)
	}
	if err := c.close(); err != nil {
		p.logger.Warn("cleanup after replay", "error", err)
	}
	res, err := p.result(c, runErr, stopped)
	if err != nil {
		return runner.Result{}, fmt.Errorf("wasm replay %s: %w", p.toolID, err)
	}
	res.Recorded = &runner.Recorded{Runner: recorderName, Deterministic: p.limits.Deterministic, Startup: rec.Startup, Call: rec.Call}
	if callRec != nil {
		if d := callRec.divergence("call"); d != "" {
			res.Recorded.NotReplayable = d
		}
		if startRec != nil {
			if d := startRec.divergence("start-up"); d != "" {
				res.Recorded.NotReplayable = d
			}
		}
	}
	return res, nil
}

// phase is the clocks and random source of a parked command's call run
// again from the module's start: the start-up's record up to the
// guest's second read of stdin (where the instance parked), the call's
// after it. The reads of stdin go as they went on the parked instance
// (park.go): the first is interrupted (EINTR), and so is the second,
// which the call resumed with; the guest's retry reads the arguments.
type phase struct {
	startup, call *recorder
	reads         int
	switched      bool
}

// current is the recorder of the stretch the guest is in.
func (ph *phase) current() *recorder {
	if ph.switched {
		return ph.call
	}
	return ph.startup
}

func (ph *phase) walltime() (int64, int32) { return ph.current().walltime() }
func (ph *phase) nanotime() int64          { return ph.current().nanotime() }

// phaseRand is random_get's source under a phase.
type phaseRand struct{ ph *phase }

// Read implements io.Reader.
func (r phaseRand) Read(p []byte) (int, error) { return r.ph.current().Read(p) }

func (ph *phase) config(cfg wazero.ModuleConfig) wazero.ModuleConfig {
	return cfg.WithWalltime(ph.walltime, sys.ClockResolution(time.Microsecond)).
		WithNanotime(ph.nanotime, sys.ClockResolution(1)).
		WithRandSource(phaseRand{ph})
}

// Read implements wasiguard.Hooks: the reads of stdin up to the call.
func (ph *phase) Read(_ context.Context, _ api.Module, stack []uint64) bool {
	if uint32(stack[0]) != 0 || ph.reads >= 2 {
		return false
	}
	ph.reads++
	ph.switched = ph.reads == 2
	stack[0] = errnoIntr
	return true
}

// Exit implements wasiguard.Hooks.
func (ph *phase) Exit(context.Context, api.Module, []uint64) bool { return false }
