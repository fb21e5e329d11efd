package host_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/hosttest"
)

// frontEnds may import the host facade; nothing else under host/ may, and
// the facade imports none of them: dependencies point one way.
var frontEnds = map[string]bool{
	"github.com/agenthost/agenthost/host/mcp":           true,
	"github.com/agenthost/agenthost/host/agent":         true,
	"github.com/agenthost/agenthost/host/hosttest":      true,
	"github.com/agenthost/agenthost/host/serve":         true,
	"github.com/agenthost/agenthost/host/jobs/natsexec": true,
}

// belowJobs may not depend on the job engine: the engine sits between
// the facade and the front-ends (host ← host/jobs ← serve, mcp, agent),
// and the leaves it uses (the budget nested workflows draw from) are
// beneath it.
var belowJobs = []string{
	"github.com/agenthost/agenthost/host",
	"github.com/agenthost/agenthost/host/workflow",
	"github.com/agenthost/agenthost/host/budget",
	"github.com/agenthost/agenthost/host/store",
	"github.com/agenthost/agenthost/host/receipt",
	"github.com/agenthost/agenthost/host/approval",
}

// TestLayers fails when a package under host/ imports the facade without
// being a front-end, the facade (directly or not) imports a front-end,
// or a package beneath the job engine depends on it.
func TestLayers(t *testing.T) {
	const jobs = "github.com/agenthost/agenthost/host/jobs"
	const facade = "github.com/agenthost/agenthost/host"
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, "./host/...")
	cmd.Dir = hosttest.Root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		pkg, imports, deps := parts[0], strings.Fields(parts[1]), strings.Fields(parts[2])
		for _, below := range belowJobs {
			if pkg == below && slices.Contains(deps, jobs) {
				t.Errorf("%s depends on the job engine %s, which sits above it", pkg, jobs)
			}
		}
		if pkg == jobs && slices.Contains(deps, facade) {
			t.Errorf("the job engine depends on the facade; it takes the call as a function")
		}
		if pkg == facade {
			for _, d := range deps {
				if frontEnds[d] {
					t.Errorf("the facade depends on the front-end %s", d)
				}
			}
			continue
		}
		for _, imp := range imports {
			if imp == facade && !frontEnds[pkg] {
				t.Errorf("%s imports the facade but is not a front-end", pkg)
			}
		}
	}
}
