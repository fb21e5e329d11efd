package natsexec

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// The kinds of messages checked (the "message" label of
// agenthost_queue_rejected_total).
const (
	MessageCall   = "call"
	MessageResult = "result"
	MessageCancel = "cancel"
)

// Why a message was dropped (the "reason" label).
const (
	// ReasonUnsigned is a message without a signature.
	ReasonUnsigned = "unsigned"
	// ReasonBadSignature is a signature that does not match: a forgery, a
	// message altered on the way (a changed tenant header), another key.
	ReasonBadSignature = "bad_signature"
	// ReasonMalformed is a signed message whose fields or body do not
	// parse (a sender of another version).
	ReasonMalformed = "malformed"
	// ReasonExpired is a call that reached a worker after its deadline.
	ReasonExpired = "expired"
	// ReasonReplayed is a copy of a call already taken: the same call ID
	// in another stream message, or one too old to tell.
	ReasonReplayed = "replayed"
)

var (
	kinds   = []string{MessageCall, MessageResult, MessageCancel}
	reasons = []string{ReasonUnsigned, ReasonBadSignature, ReasonMalformed, ReasonExpired, ReasonReplayed}
)

var rejectedDesc = prometheus.NewDesc("agenthost_queue_rejected_total",
	"Queue messages dropped unread, by kind of message and reason (forged, unsigned, expired, replayed).",
	[]string{"message", "reason"}, nil)

// rejections counts dropped messages; the labels are two small fixed
// sets, so the series are bounded. Drops are logged at most once a
// second (a flood of forgeries does not flood the log).
type rejections struct {
	n       [3][5]atomic.Uint64
	log     hclog.Logger
	lastLog atomic.Int64
}

func index(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func (r *rejections) add(kind, reason, subject string) {
	k, why := index(kinds, kind), index(reasons, reason)
	if k < 0 || why < 0 {
		panic("queue: unknown rejection " + kind + "/" + reason)
	}
	r.n[k][why].Add(1)
	now := time.Now().UnixNano()
	if last := r.lastLog.Load(); now-last >= int64(time.Second) && r.lastLog.CompareAndSwap(last, now) {
		r.log.Warn("dropped a queue message", "message", kind, "reason", reason, "subject", subject, "total", r.n[k][why].Load())
	}
}

func (r *rejections) get(kind, reason string) uint64 {
	k, why := index(kinds, kind), index(reasons, reason)
	if k < 0 || why < 0 {
		return 0
	}
	return r.n[k][why].Load()
}

// Describe implements prometheus.Collector.
func (r *rejections) Describe(ch chan<- *prometheus.Desc) { ch <- rejectedDesc }

// Collect implements prometheus.Collector: every kind and reason, zeros
// included, so an alert on a rise has a series from the start.
func (r *rejections) Collect(ch chan<- prometheus.Metric) {
	for k, kind := range kinds {
		for why, reason := range reasons {
			ch <- prometheus.MustNewConstMetric(rejectedDesc, prometheus.CounterValue, float64(r.n[k][why].Load()), kind, reason)
		}
	}
}
