package runner

// Inputs is what one stretch of guest code saw that neither its module nor
// its arguments determine: its random bytes and its clock readings.
// Together with the module, the grant and the arguments they determine the
// stretch exactly, so a runner given them back runs it again bit for bit.
type Inputs struct {
	// Seed (32 bytes) keys the ChaCha8 stream the guest's random_get
	// read; nil when it read no random bytes.
	Seed []byte `json:"seed,omitempty"`
	// Wall is the wall clock at the start, in Unix nanoseconds; Mono the
	// monotonic clock then, in nanoseconds.
	Wall int64 `json:"wall"`
	Mono int64 `json:"mono"`
	// Clock holds every clock reading in order, each as the nanoseconds
	// elapsed since the previous one (the first since the start). A wall
	// clock reading is Wall plus the elapsed time, a monotonic one Mono
	// plus it.
	Clock []int64 `json:"clock,omitempty"`
}

// Recorded is what a call's guest saw besides its arguments, for an exact
// replay of the call (Request.Replay). A runner that records sets
// Result.Recorded; the recorded seeds make the call's random bytes
// known, so it belongs only where the call's arguments and output are
// kept (the receipt store).
type Recorded struct {
	// Runner names the runner that recorded the call ("wasm").
	Runner string `json:"runner"`
	// Deterministic: the tool ran with a fixed clock and seeded random
	// (limits.deterministic); nothing else needed recording.
	Deterministic bool `json:"deterministic,omitempty"`
	// Startup is the start-up the call's instance began from, for a
	// tool that starts once and serves calls from a snapshot (a
	// reactor's pre-initialisation, a parked command's run up to its
	// read of stdin); nil when the call ran from the module's start.
	Startup *Inputs `json:"startup,omitempty"`
	// Call is what the call itself saw.
	Call Inputs `json:"call"`
	// NotReplayable says why the record cannot replay the call (a bound
	// on what is recorded was reached); "" when it can.
	NotReplayable string `json:"notReplayable,omitempty"`
}
