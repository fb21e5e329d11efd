package serve

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, on a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agenthost_http_requests_total", Help: "HTTP requests by route and status."}, []string{"route", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agenthost_http_request_seconds", Help: "HTTP request latency by route.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"route"})
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agenthost_tool_calls_total", Help: "Tool calls by tenant, tool, status and error code."}, []string{"tenant", "tool", "status", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agenthost_tool_call_seconds", Help: "Tool call duration by tenant and tool.", Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10)}, []string{"tenant", "tool"})
	m.reg.MustRegister(m.requests, m.latency, m.calls, m.duration, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) request(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) call(tenant, tool, status, code string, seconds float64) {
	m.calls.WithLabelValues(tenant, tool, status, code).Inc()
	m.duration.WithLabelValues(tenant, tool).Observe(seconds)
}

// hostCollector reads the hosts' pools, calls in flight and the queue's
// depth at scrape time.
type hostCollector struct {
	s                                                       *Server
	hits, misses, discards, waits, ready, live, inflight, q *prometheus.Desc
}

func newHostCollector(s *Server) *hostCollector {
	l := []string{"tenant", "tool"}
	return &hostCollector{s: s,
		hits:     prometheus.NewDesc("agenthost_pool_hits_total", "Calls served by a ready pooled instance.", l, nil),
		misses:   prometheus.NewDesc("agenthost_pool_misses_total", "Calls that had to make an instance.", l, nil),
		discards: prometheus.NewDesc("agenthost_pool_discards_total", "Instances thrown away instead of reused.", l, nil),
		waits:    prometheus.NewDesc("agenthost_pool_waits_total", "Calls that found every pooled instance busy and waited for one.", l, nil),
		ready:    prometheus.NewDesc("agenthost_pool_ready_instances", "Instances waiting for a call.", l, nil),
		live:     prometheus.NewDesc("agenthost_pool_instances", "Pooled instances that exist (ready, in use or being restored).", l, nil),
		inflight: prometheus.NewDesc("agenthost_tool_calls_in_flight", "Calls running now.", l, nil),
		q:        prometheus.NewDesc("agenthost_queue_depth", "Calls waiting on the work queue for a worker.", nil, nil),
	}
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hits, c.misses, c.discards, c.waits, c.ready, c.live, c.inflight, c.q} {
		ch <- d
	}
}

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	for name, t := range c.s.o.Tenants {
		for _, th := range t.Host.Health() {
			if th.InFlight > 0 {
				ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(th.InFlight), name, th.ID)
			}
			if p := th.Pool; p != nil {
				ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(p.Hits), name, th.ID)
				ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(p.Misses), name, th.ID)
				ch <- prometheus.MustNewConstMetric(c.discards, prometheus.CounterValue, float64(p.Discards), name, th.ID)
				ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(p.Waits), name, th.ID)
				ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(p.Ready), name, th.ID)
				ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(p.Instances), name, th.ID)
			}
		}
	}
	if c.s.o.QueueDepth != nil {
		if n, err := c.s.o.QueueDepth(); err == nil {
			ch <- prometheus.MustNewConstMetric(c.q, prometheus.GaugeValue, float64(n))
		}
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
