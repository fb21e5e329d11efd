package extism

import "github.com/agenthost/agenthost/host/internal/netguard"

// SetNetwork replaces the resolver and dialer the runner's guards use.
func SetNetwork(r *Runner, res netguard.Resolver, dial netguard.DialFunc) (reset func()) {
	oldRes, oldDial := r.resolver, r.dial
	r.resolver, r.dial = res, dial
	return func() { r.resolver, r.dial = oldRes, oldDial }
}
