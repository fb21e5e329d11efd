package wasm

import "testing"

// TestTieringSwitch: tiering is on by default, and Options.NoTiering or
// AGENTHOST_WASM_TIERING=off turn it off.
func TestTieringSwitch(t *testing.T) {
	if !tieringSupported() {
		t.Skip("no compiler on this platform: nothing to tier")
	}
	tests := []struct {
		name string
		opts Options
		env  string
		want bool
	}{
		{name: "default", want: true},
		{name: "option off", opts: Options{NoTiering: true}, want: false},
		{name: "env off", env: "off", want: false},
		{name: "env 0", env: "0", want: false},
		{name: "env on", env: "on", want: true},
		{name: "forced over the option", opts: Options{NoTiering: true, forceTiering: true}, env: "off", want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvTiering, tc.env)
			if got := tieringOn(tc.opts, true); got != tc.want {
				t.Fatalf("tiering %v, want %v", got, tc.want)
			}
		})
	}
}
