package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	tests := []struct {
		done, total int
		want        string
	}{
		{0, 4, "[........................] 0/4 1.5s"},
		{1, 4, "[######..................] 1/4 1.5s"},
		{4, 4, "[########################] 4/4 1.5s"},
		{0, 0, "[........................] 0/0 1.5s"},
	}
	for _, tc := range tests {
		got := progressLine(tc.done, tc.total, 1500*time.Millisecond)
		if !strings.Contains(got, tc.want) || !strings.HasPrefix(got, "agenthost: preparing tools ") {
			t.Errorf("progressLine(%d, %d) = %q, want it to hold %q", tc.done, tc.total, got, tc.want)
		}
	}
}

// TestIsTerminal: the bar is drawn only on a terminal, never into a
// buffer, a file or a pipe (a script reading stderr).
func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, out := range map[string]any{"buffer": &bytes.Buffer{}, "pipe": w, "file": f} {
		if isTerminal(out.(interface{ Write([]byte) (int, error) })) {
			t.Errorf("%s: taken for a terminal", name)
		}
	}
}

// TestProgressBar_drawsAfterItsDelay: nothing is drawn before
// progressAfter, the bar after it, nothing once finished, and clear
// erases what was drawn.
func TestProgressBar_drawsAfterItsDelay(t *testing.T) {
	var out bytes.Buffer
	b := &progressBar{w: &out, start: time.Now()}
	b.set(1, 3)
	if !b.draw() || out.Len() != 0 {
		t.Fatalf("drawn before its delay: %q", out.String())
	}
	b.start = time.Now().Add(-2 * progressAfter)
	if !b.draw() || !strings.Contains(out.String(), "1/3") {
		t.Fatalf("not drawn after its delay: %q", out.String())
	}
	b.set(-1, 0)
	n := out.Len()
	if b.draw() || out.Len() != n {
		t.Fatalf("drawn after the end: %q", out.String())
	}
	b.clear()
	if !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Fatalf("not cleared: %q", out.String())
	}
}
