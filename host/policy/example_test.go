package policy_test

import (
	"fmt"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

func ExampleMatch() {
	fmt.Println(policy.Match("data/**", "data"))
	fmt.Println(policy.Match("data/**", "data/2024/q1.csv"))
	fmt.Println(policy.Match("*.txt", "docs/a.txt"))
	fmt.Println(policy.Match("**", "data/../secret"))
	// Output:
	// true
	// true
	// false
	// false
}

func ExamplePolicy_Grant() {
	p, err := policy.Parse([]byte(`
workspace: /srv/work
fileAccess: {allowRead: ["data/**"], allowWrite: ["out/**"]}
networkAccess: {allowHosts: ["*.example.com"]}
env: [LANG]
`), "/etc/agenthost/policy.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	t := &manifest.Tool{ToolID: "web:fetch", SecurityContext: &manifest.SecurityContext{
		FileAccess:    &manifest.FileAccess{AllowRead: []string{"**"}, AllowWrite: []string{"out/*.json"}},
		NetworkAccess: &manifest.NetworkAccess{AllowHosts: []string{"api.example.com", "evil.org"}},
		Env:           []string{"LANG", "AWS_SECRET_ACCESS_KEY"},
		Limits:        &manifest.Limits{TimeoutMs: 120000},
	}}
	g := p.Grant(t, func(string) (string, bool) { return "C.UTF-8", true })
	fmt.Println("read:", g.Read)
	fmt.Println("write:", g.Write)
	fmt.Println("hosts:", g.Hosts, "env:", g.EnvNames, "timeout:", g.Limits.Timeout)
	for _, d := range g.Denials {
		fmt.Printf("denied %s %q: %s\n", d.Capability, d.Requested, d.Reason)
	}
	fmt.Println(g.Allows(policy.RootWorkspace, "data/q1.csv", false), g.Allows(policy.RootWorkspace, "secret.txt", false))
	fmt.Println(g.AllowsHost("https", "api.example.com", 443), g.AllowsHost("https", "evil.org", 443))
	// Output:
	// read: [$TOOL/** $TMP/** data/**]
	// write: [$TMP/** out/*.json]
	// hosts: [api.example.com] env: [LANG] timeout: 1m0s
	// denied fileAccess.allowRead "**": narrowed to data/** by the policy's fileAccess.allowRead
	// denied networkAccess.allowHosts "evil.org": not covered by the policy's networkAccess.allowHosts
	// denied env "AWS_SECRET_ACCESS_KEY": not listed in the policy's env
	// denied limits.timeoutMs "120000": above the policy maximum 60000; clamped
	// true false
	// true false
}

func ExampleParseHostRule() {
	r, err := policy.ParseHostRule("HTTPS://API.Example.com:443")
	fmt.Println(r, err)
	// Output: https://api.example.com <nil>
}

func ExampleParse() {
	_, err := policy.Parse([]byte(`
fileAccess: {allowWrite: ["../**"]}
tools:
  "core:echo": {denyy: true}
requireSignature: true
`), "policy.yaml")
	fmt.Println(err)
	// Output:
	// policy policy.yaml: /tools/core:echo: additional properties 'denyy' not allowed ('denyy': did you mean 'deny'?)
}

func ExampleGrant_CanList() {
	g := &policy.Grant{Read: []policy.PathRule{{Root: policy.RootWorkspace, Pattern: "data/**"}}}
	for _, dir := range []string{".", "data", "data/2024", "secret"} {
		fmt.Println(dir, g.CanList(policy.RootWorkspace, dir))
	}
	fmt.Println(g.Allows(policy.RootWorkspace, "secret.txt", false))
	// Output:
	// . true
	// data true
	// data/2024 true
	// secret false
	// false
}
