package serve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host"
)

// Warmth is what /readyz says of the background warm-up of every
// tenant's tools (host.WarmInBackground): the server answers calls
// before it is done, each tool's first calls then waiting for its
// preparation.
type Warmth struct {
	// Done is true once every tenant's warm-up (at start, and after the
	// latest catalogue change) has ended.
	Done bool `json:"done"`
	// Tools is how many tools were warmed, Ready how many of them have
	// an instance ready; NoBudget how many the pool budget left without
	// one (agenthost_pool_warm_no_budget in /metrics names them); Failed
	// how many failed to load or to make an instance. The others make
	// an instance per call by nature (no pool).
	Tools    int `json:"tools"`
	Ready    int `json:"ready"`
	NoBudget int `json:"noBudget"`
	Failed   int `json:"failed"`
}

// warmth sums the tenants' warm-ups.
func (s *Server) warmth() *Warmth {
	w := &Warmth{Done: true}
	for _, t := range s.o.Tenants {
		rep, done := t.Host.WarmStatus()
		w.Done = w.Done && done
		w.Tools += rep.Tools
		w.Ready += len(rep.Ready)
		w.NoBudget += len(rep.NoBudget)
		w.Failed += len(rep.Failed)
	}
	return w
}

// warmCollector reads a tenant's last warm-up at scrape time.
type warmCollector struct {
	tenant         string
	h              *host.Host
	done, noBudget *prometheus.Desc
}

func newWarmCollector(tenant string, h *host.Host) *warmCollector {
	return &warmCollector{tenant: tenant, h: h,
		done:     prometheus.NewDesc("agenthost_pool_warm_done", "1 once the background warm-up of the tools (at start and after each catalogue change) has ended.", []string{"tenant"}, nil),
		noBudget: prometheus.NewDesc("agenthost_pool_warm_no_budget", "1 for each tool the pool budget (policy pool.memoryMb) left without a warm instance; the most called tools were warmed first.", []string{"tenant", "tool"}, nil),
	}
}

func (c *warmCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.done
	ch <- c.noBudget
}

func (c *warmCollector) Collect(ch chan<- prometheus.Metric) {
	rep, done := c.h.WarmStatus()
	v := 0.0
	if done {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(c.done, prometheus.GaugeValue, v, c.tenant)
	for _, id := range rep.NoBudget {
		ch <- prometheus.MustNewConstMetric(c.noBudget, prometheus.GaugeValue, 1, c.tenant, id)
	}
}
