package netguard_test

import (
	"fmt"
	"net/url"

	"github.com/agenthost/agenthost/host/internal/netguard"
	"github.com/agenthost/agenthost/host/policy"
)

func ExampleForGrant() {
	rule, _ := policy.ParseHostRule("*.wikipedia.org")
	g := netguard.ForGrant(&policy.Grant{Hosts: []policy.HostRule{rule}}, netguard.Options{})
	for _, raw := range []string{"https://en.wikipedia.org/wiki/Go", "https://wikipedia.org/", "http://169.254.169.254/"} {
		u, _ := url.Parse(raw)
		fmt.Println(g.CheckURL(u))
	}
	fmt.Println("refusals:", g.Denials())
	// Output:
	// <nil>
	// PERMISSION_DENIED: network access to wikipedia.org denied: https://wikipedia.org:443 is not in the allowlist
	// PERMISSION_DENIED: network access to 169.254.169.254 denied: http://169.254.169.254:80 is not in the allowlist
	// refusals: 2
}
