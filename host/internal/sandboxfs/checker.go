package sandboxfs

import (
	"sync"

	"github.com/agenthost/agenthost/host/policy"
)

// Checker decides file access under a grant. *policy.Grant implements it.
//
// rel is a clean slash-separated path relative to root, "." for the root
// itself; it never starts with "/" or "..".
type Checker interface {
	// Allows reports whether rel may be read (write false) or written
	// (write true: created, truncated, modified, renamed, removed).
	Allows(root policy.Root, rel string, write bool) bool
	// CanList reports whether the directory relDir may be listed, i.e.
	// whether a granted rule can match something under it.
	CanList(root policy.Root, relDir string) bool
}

// MaxDenialLines is how many refusal lines a [Denials] keeps; later
// refusals are only counted, so a guest probing in a loop cannot grow the
// host's memory.
const MaxDenialLines = 100

// Denials records the accesses refused during one call. It is safe for
// concurrent use.
type Denials struct {
	mu     sync.Mutex
	lines  []string
	count  int
	onDeny func(line string)
}

// NewDenials returns an empty record. onDeny, if not nil, receives each
// refusal line as it happens (the runner appends it to the call's logs).
func NewDenials(onDeny func(line string)) *Denials {
	return &Denials{onDeny: onDeny}
}

// Record adds one refusal line such as
// "denied: open /workspace/secret.txt (read)".
func (d *Denials) Record(line string) {
	d.mu.Lock()
	d.count++
	if len(d.lines) < MaxDenialLines {
		d.lines = append(d.lines, line)
	}
	hook := d.onDeny
	d.mu.Unlock()
	if hook != nil {
		hook(line)
	}
}

// Reset empties the record and sets its hook, so a pooled mount set can
// serve another call.
func (d *Denials) Reset(onDeny func(line string)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lines, d.count, d.onDeny = d.lines[:0], 0, onDeny
}

// Count returns the number of refusals so far.
func (d *Denials) Count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.count
}

// Lines returns a copy of the first [MaxDenialLines] refusal lines.
func (d *Denials) Lines() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.lines...)
}
