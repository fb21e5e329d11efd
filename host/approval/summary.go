package approval

import "github.com/agenthost/agenthost/host/policy"

// Summary is what a person needs to know of a call's effective grant to
// decide: where it may read and write, which hosts it may reach, which
// variables and credentials it gets, and its time limit.
type Summary struct {
	Read        []string `json:"read"`
	Write       []string `json:"write"`
	Hosts       []string `json:"hosts"`
	Env         []string `json:"env"`
	Credentials []string `json:"credentials"`
	TimeoutMs   int64    `json:"timeoutMs"`
}

// Summarize summarises grant g for a call that gets the credentials
// named.
func Summarize(g *policy.Grant, credentials []string) Summary {
	s := Summary{Read: []string{}, Write: []string{}, Hosts: []string{}, Env: []string{}, Credentials: []string{}}
	if g == nil {
		return s
	}
	for _, r := range g.Read {
		s.Read = append(s.Read, "$"+string(r.Root)+"/"+r.Pattern)
	}
	for _, r := range g.Write {
		s.Write = append(s.Write, "$"+string(r.Root)+"/"+r.Pattern)
	}
	for _, h := range g.Hosts {
		s.Hosts = append(s.Hosts, h.String())
	}
	s.Env = append(s.Env, g.EnvNames...)
	s.Credentials = append(s.Credentials, credentials...)
	s.TimeoutMs = g.Limits.Timeout.Milliseconds()
	return s
}
