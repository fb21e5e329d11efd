package serve

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
)

// otherTool is the tool label of every call to an ID the tenant has not
// loaded: IDs come from clients and models, and one series each would
// grow the metrics without bound.
const otherTool = "other"

// metrics are the server's Prometheus metrics. The process's (HTTP,
// Go, process, queue) are on one registry and each tenant's (its tool
// calls and pools) on a registry of its own, so that a tenant's admin
// token is shown its tenant's alone and the operator's everything.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	tenants  map[string]*tenantMetrics
	// all serves every registry (the operator's view).
	all http.Handler
}

// tenantMetrics are one tenant's series.
type tenantMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	handler  http.Handler
}

func newMetrics(tenants map[string]*Tenant, queueDepth func() (int64, error)) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), tenants: map[string]*tenantMetrics{}}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agenthost_http_requests_total", Help: "HTTP requests by route and status."}, []string{"route", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agenthost_http_request_seconds", Help: "HTTP request latency by route.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"route"})
	m.reg.MustRegister(m.requests, m.latency, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if queueDepth != nil {
		m.reg.MustRegister(queueCollector{queueDepth})
	}
	all := prometheus.Gatherers{m.reg}
	names := make([]string, 0, len(tenants))
	for name := range tenants {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		reg := prometheus.NewRegistry()
		tm := &tenantMetrics{
			calls:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agenthost_tool_calls_total", Help: "Tool calls by tenant, tool, status and error code."}, []string{"tenant", "tool", "status", "code"}),
			duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agenthost_tool_call_seconds", Help: "Tool call duration by tenant and tool.", Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10)}, []string{"tenant", "tool"}),
		}
		reg.MustRegister(tm.calls, tm.duration, newHostCollector(name, tenants[name].Host), newWarmCollector(name, tenants[name].Host))
		tm.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		m.tenants[name] = tm
		all = append(all, reg)
	}
	m.all = promhttp.HandlerFor(all, promhttp.HandlerOpts{})
	return m
}

func (m *metrics) request(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// call counts a tenant's tool call by its envelope.
func (m *metrics) call(c *call, env abi.Envelope) {
	tm := m.tenants[c.p.Tenant]
	code := ""
	if env.Error != nil {
		code = string(env.Error.Code)
	}
	tool := toolLabel(c.tenant.Host, env)
	tm.calls.WithLabelValues(c.p.Tenant, tool, string(env.Status), code).Inc()
	tm.duration.WithLabelValues(c.p.Tenant, tool).Observe(env.DurationMs / 1000)
}

// toolLabel is the ID of the loaded tool an envelope is from, or
// otherTool. An unknown ID (or one that failed to load) is not looked up:
// the envelope says so already.
func toolLabel(h *host.Host, env abi.Envelope) string {
	if env.Error != nil && (env.Error.Code == abi.CodeUnknownTool || env.Error.Code == abi.CodeLoadError) {
		return otherTool
	}
	if t, err := h.Tool(env.ToolID); err == nil {
		return t.ToolID
	}
	return otherTool
}

// hostCollector reads a tenant's pools and calls in flight at scrape
// time.
type hostCollector struct {
	tenant                                               string
	h                                                    *host.Host
	hits, misses, discards, waits, ready, live, inflight *prometheus.Desc
}

func newHostCollector(tenant string, h *host.Host) *hostCollector {
	l := []string{"tenant", "tool"}
	return &hostCollector{tenant: tenant, h: h,
		hits:     prometheus.NewDesc("agenthost_pool_hits_total", "Calls served by a ready pooled instance.", l, nil),
		misses:   prometheus.NewDesc("agenthost_pool_misses_total", "Calls that had to make an instance.", l, nil),
		discards: prometheus.NewDesc("agenthost_pool_discards_total", "Instances thrown away instead of reused.", l, nil),
		waits:    prometheus.NewDesc("agenthost_pool_waits_total", "Calls that found every pooled instance busy and waited for one.", l, nil),
		ready:    prometheus.NewDesc("agenthost_pool_ready_instances", "Instances waiting for a call.", l, nil),
		live:     prometheus.NewDesc("agenthost_pool_instances", "Pooled instances that exist (ready, in use or being restored).", l, nil),
		inflight: prometheus.NewDesc("agenthost_tool_calls_in_flight", "Calls running now.", l, nil),
	}
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hits, c.misses, c.discards, c.waits, c.ready, c.live, c.inflight} {
		ch <- d
	}
}

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	for _, th := range c.h.Health() {
		if th.InFlight > 0 {
			ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(th.InFlight), c.tenant, th.ID)
		}
		if p := th.Pool; p != nil {
			ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(p.Hits), c.tenant, th.ID)
			ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(p.Misses), c.tenant, th.ID)
			ch <- prometheus.MustNewConstMetric(c.discards, prometheus.CounterValue, float64(p.Discards), c.tenant, th.ID)
			ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(p.Waits), c.tenant, th.ID)
			ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(p.Ready), c.tenant, th.ID)
			ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(p.Instances), c.tenant, th.ID)
		}
	}
}

// queueCollector reads the work queue's depth at scrape time (left out
// when the queue does not answer).
type queueCollector struct{ depth func() (int64, error) }

var queueDepthDesc = prometheus.NewDesc("agenthost_queue_depth", "Calls waiting on the work queue for a worker.", nil, nil)

func (q queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- queueDepthDesc }

func (q queueCollector) Collect(ch chan<- prometheus.Metric) {
	if n, err := q.depth(); err == nil {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(n))
	}
}

// handler serves the metrics a principal may see: everything with the
// operator scope, its tenant's series otherwise (wrap let only a served
// tenant through).
func (m *metrics) handler(p Principal) http.Handler {
	if p.may(ScopeOperator) {
		return m.all
	}
	return m.tenants[p.Tenant].handler
}
