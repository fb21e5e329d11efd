package natsexec

import (
	"encoding/hex"
	"sync"
)

// replayMemory remembers the calls a worker took, so that a copy of one
// (its call ID in another stream message) is refused. It holds at most
// max calls and forgets the oldest first; a call it does not remember,
// issued no later than the newest call it forgot, is refused as well,
// since it may be a copy of a forgotten one (it fails closed). A legit
// call is refused that way only when this worker took more than max
// other calls while it waited in the queue.
//
// A copy published within the stream's duplicate window never reaches a
// worker (the server drops it by its message ID, which the signature
// binds to the call ID), and one past the call's deadline is expired: the
// memory covers copies between the two on this worker.
type replayMemory struct {
	mu    sync.Mutex
	max   int
	seq   map[[16]byte]uint64 // call ID → stream sequence of the message
	ring  []seen              // oldest first from head, once full
	head  int
	floor int64 // unix ms: the issue time of the newest call forgotten
}

type seen struct {
	id     [16]byte
	issued int64
}

func newReplayMemory(max int) *replayMemory {
	return &replayMemory{max: max, seq: make(map[[16]byte]uint64)}
}

// admit records call id, taken from stream message seq, and reports
// whether it may run: a call not seen before, or the same message
// delivered again (its worker died); not a copy in another message.
// issued and now are unix ms.
func (r *replayMemory) admit(id string, seq uint64, issued, now int64) bool {
	var key [16]byte
	if n, err := hex.Decode(key[:], []byte(id)); err != nil || n != 16 {
		return false
	}
	// A call dated in the future must not raise the floor past the
	// present when it is forgotten.
	issued = min(issued, now)
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.seq[key]; ok {
		return s == seq
	}
	if issued <= r.floor {
		return false
	}
	e := seen{id: key, issued: issued}
	if len(r.ring) < r.max {
		r.ring = append(r.ring, e)
	} else {
		old := r.ring[r.head]
		delete(r.seq, old.id)
		r.floor = max(r.floor, old.issued)
		r.ring[r.head] = e
		r.head = (r.head + 1) % r.max
	}
	r.seq[key] = seq
	return true
}
