package cputime_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/cputime"
)

// TestGrows: spinning on the CPU moves the process's and the thread's
// readings forward (where the system can tell them).
func TestGrows(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no getrusage here: every reading is 0")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p0, t0, c0 := cputime.Process(), cputime.Thread(), cputime.WithChildren()
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
	}
	if p := cputime.Process(); p <= p0 {
		t.Errorf("Process: %v, then %v", p0, p)
	}
	if c := cputime.WithChildren(); c < cputime.Process()-time.Second || c <= c0 {
		t.Errorf("WithChildren: %v, then %v", c0, c)
	}
	if runtime.GOOS == "linux" {
		if th := cputime.Thread(); th <= t0 {
			t.Errorf("Thread: %v, then %v", t0, th)
		}
	}
}
