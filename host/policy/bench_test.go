package policy_test

import (
	"testing"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

// benchPolicy is a typical operator policy.
func benchPolicy(b *testing.B) *policy.Policy {
	b.Helper()
	p, err := policy.Parse([]byte(`
workspace: /srv/work
cacheDir: /var/cache/agenthost
fileAccess: {allowRead: ["**"], allowWrite: ["out/**"]}
networkAccess: {allowHosts: ["*.example.com", "https://api.github.com"]}
env: [LANG, TZ]
tools:
  "web:fetch": {config: {key: v}}
`), "/srv/policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// benchTool is a typical request: a few paths, a host, an env variable.
var benchTool = &manifest.Tool{
	ToolID: "web:fetch", Version: "1.0.0", Dir: "/toolpacks/web",
	Handler: manifest.Handler{Type: manifest.HandlerWasm, Config: map[string]string{"a": "b"}},
	SecurityContext: &manifest.SecurityContext{
		FileAccess:    &manifest.FileAccess{AllowRead: []string{"data/**", "$TOOL/**"}, AllowWrite: []string{"out/*.json", "$TMP/**"}},
		NetworkAccess: &manifest.NetworkAccess{AllowHosts: []string{"api.example.com"}},
		Env:           []string{"LANG"},
		Limits:        &manifest.Limits{TimeoutMs: 5000, MemoryMb: 64},
	},
}

func lookupLang(k string) (string, bool) {
	if k == "LANG" {
		return "C.UTF-8", true
	}
	return "", false
}

func BenchmarkGrant(b *testing.B) {
	p := benchPolicy(b)
	b.ReportAllocs()
	for b.Loop() {
		g := p.Grant(benchTool, lookupLang)
		if len(g.Denials) != 0 {
			b.Fatal(g.Denials)
		}
	}
}

func BenchmarkGrant_narrowed(b *testing.B) {
	p := benchPolicy(b)
	p.FileAccess.AllowRead = []string{"data/**", "docs/**"}
	t := *benchTool
	sc := *t.SecurityContext
	sc.FileAccess = &manifest.FileAccess{AllowRead: []string{"**/*.md"}}
	t.SecurityContext = &sc
	b.ReportAllocs()
	for b.Loop() {
		p.Grant(&t, lookupLang)
	}
}

func BenchmarkAllows(b *testing.B) {
	g := benchPolicy(b).Grant(benchTool, lookupLang)
	cases := []struct {
		name  string
		root  policy.Root
		rel   string
		write bool
		want  bool
	}{
		{"read-granted", policy.RootWorkspace, "data/2024/q1/report.csv", false, true},
		{"read-denied", policy.RootWorkspace, "secret/keys/id_rsa", false, false},
		{"write-granted", policy.RootWorkspace, "out/result.json", true, true},
		{"escape", policy.RootWorkspace, "data/../../etc/passwd", false, false},
		{"tmp", policy.RootTmp, "scratch/a.txt", true, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if g.Allows(c.root, c.rel, c.write) != c.want {
					b.Fatal("wrong answer")
				}
			}
		})
	}
}

func BenchmarkCanList(b *testing.B) {
	g := benchPolicy(b).Grant(benchTool, lookupLang)
	b.ReportAllocs()
	for b.Loop() {
		if !g.CanList(policy.RootWorkspace, "data/2024") {
			b.Fatal("wrong answer")
		}
	}
}

func BenchmarkAllowsHost(b *testing.B) {
	g := &policy.Grant{}
	for _, s := range []string{"https://api.github.com", "*.example.com", "10.0.0.7:8080"} {
		r, err := policy.ParseHostRule(s)
		if err != nil {
			b.Fatal(err)
		}
		g.Hosts = append(g.Hosts, r)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !g.AllowsHost("https", "Static.CDN.Example.com", 443) {
			b.Fatal("wrong answer")
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !policy.Match("a/**/b/**/*.txt", "a/x/y/b/z/w/notes.txt") {
			b.Fatal("wrong answer")
		}
	}
}
