package wasm

// SetRecording turns the recording of calls on or off (benchmarks of
// what it costs); it is on by default.
func SetRecording(on bool) { recordOff.Store(!on) }
