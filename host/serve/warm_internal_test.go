package serve

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
)

// TestWarmCollector_noBudget: with a pool budget too small for a warm
// instance of every tool, /metrics names the tools left without one and
// says the warm-up is done.
func TestWarmCollector_noBudget(t *testing.T) {
	pol := hosttest.Policy(t, "workspace: .\npool:\n  memoryMb: 1\n")
	h := hosttest.NewHost(t, pol, filepath.Join(hosttest.Toolpacks(t), "text"))
	h.WarmInBackground()
	var rep host.WarmReport
	for i := 0; ; i++ {
		var done bool
		if rep, done = h.WarmStatus(); done {
			break
		}
		if i == 2400 {
			t.Fatal("the warm-up did not end")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(rep.NoBudget) == 0 || len(rep.Ready) == 0 {
		t.Fatalf("a 1 MiB budget for three tools: %+v", rep)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newWarmCollector("acme", h))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	done := false
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "agenthost_pool_warm_done":
				done = m.GetGauge().GetValue() == 1
			case "agenthost_pool_warm_no_budget":
				for _, l := range m.GetLabel() {
					if l.GetName() == "tool" {
						named = append(named, l.GetValue())
					}
				}
			}
		}
	}
	if !done || strings.Join(named, ",") != strings.Join(rep.NoBudget, ",") {
		t.Fatalf("metrics: done %v, tools without budget %v; want done and %v", done, named, rep.NoBudget)
	}
}
