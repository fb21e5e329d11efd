package natsexec

import (
	"fmt"
	"testing"
)

func id(n int) string { return fmt.Sprintf("%032x", n) }

// TestReplayMemory: a call is admitted once, and again only as the same
// stream message (a redelivery); the memory holds max calls, and a call
// it forgot, or any older one it never saw, is refused (fail closed),
// while newer calls still pass.
func TestReplayMemory(t *testing.T) {
	const now = 1_000_000
	r := newReplayMemory(3)
	for _, tc := range []struct {
		name   string
		id     int
		seq    uint64
		issued int64
		want   bool
	}{
		{"a new call", 1, 10, now - 50, true},
		{"its redelivery", 1, 10, now - 50, true},
		{"a copy in another message", 1, 11, now - 50, false},
		{"a second call", 2, 12, now - 40, true},
		{"a third call", 3, 13, now - 30, true},
		{"a fourth: call 1 is forgotten", 4, 14, now - 20, true},
		{"call 1 again: too old to tell", 1, 15, now - 50, false},
		{"a call never seen, older than the floor", 9, 16, now - 60, false},
		{"a call never seen, newer than the floor", 10, 17, now - 45, true},
		{"call 2 is forgotten now, its copy refused", 2, 18, now - 40, false},
		{"call 4 is still remembered", 4, 19, now - 20, false},
		{"a malformed ID", -1, 20, now, false},
	} {
		s := id(tc.id)
		if tc.id < 0 {
			s = "not hex"
		}
		if got := r.admit(s, tc.seq, tc.issued, now); got != tc.want {
			t.Errorf("%s: admitted %v, want %v", tc.name, got, tc.want)
		}
	}
	if len(r.seq) > 3 || len(r.ring) > 3 {
		t.Fatalf("holds %d calls", len(r.seq))
	}
	// A call dated in the future does not raise the floor past now.
	f := newReplayMemory(1)
	f.admit(id(1), 1, now+1e9, now)
	f.admit(id(2), 2, now, now)
	if f.floor > now {
		t.Fatalf("floor %d after a call from the future", f.floor)
	}
	if !f.admit(id(3), 3, now+1, now+1) {
		t.Fatal("a new call refused after a call from the future")
	}
}
