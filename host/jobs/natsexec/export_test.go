package natsexec

import (
	"time"

	"github.com/nats-io/nats.go"
)

// ReplySubject opens a call message with the shared key and returns the
// reply subject sealed in it: tests stand in for an attacker who learned
// it, to show that knowing it is not enough.
func ReplySubject(key []byte, m *nats.Msg) string {
	c, reason := newKeys(key).openCall(m.Header, m.Data, time.Now())
	if reason != "" {
		return ""
	}
	return c.reply
}
