package approval

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/host/policy"
)

// The risk flags a match reports: which conditions of the rule held.
// Hosts and arguments carry what matched ("hosts:*.example.com",
// "args:path").
const (
	RiskWrite       = "write"
	RiskHosts       = "hosts"
	RiskCredentials = "credentials"
	RiskArgs        = "args"
)

// Call describes one call to the rules: who makes it, which tool, with
// which arguments, under which grant.
type Call struct {
	// Tenant the call runs for ("default" when empty).
	Tenant string
	// Tool is the tool ID (without version).
	Tool string
	// Args is the call's arguments, a JSON object.
	Args json.RawMessage
	// Grant is the call's effective grant.
	Grant *policy.Grant
	// Credentials names the short-lived credentials the call gets.
	Credentials []string
}

// Rules are a policy's approve rules, ready to match calls. A nil *Rules
// matches nothing.
type Rules struct {
	rules []rule
	// named caches Names by tool ID (the catalogue's IDs: bounded by
	// maxNamed all the same), so that the calls of tools no rule names
	// pay one map read, not a glob match per rule.
	named  sync.Map
	nNamed atomic.Int32
}

// maxNamed bounds the Names cache.
const maxNamed = 4096

type rule struct {
	index   int
	tools   []string
	write   bool
	hosts   []string
	creds   bool
	args    []argCond
	timeout time.Duration
}

type argCond struct {
	name string
	path []string
	glob string
}

// NewRules prepares the approve rules of a validated policy; nil when
// there are none, so that a host without rules pays one nil check per
// call.
func NewRules(rs []policy.ApproveRule) *Rules {
	if len(rs) == 0 {
		return nil
	}
	out := &Rules{rules: make([]rule, 0, len(rs))}
	for i, r := range rs {
		c := rule{index: i, tools: r.Tools, timeout: time.Duration(r.ApproveTimeout()) * time.Second}
		if w := r.When; w != nil {
			c.write, c.creds = w.Write, w.Credentials
			for _, h := range w.Hosts {
				if n, err := policy.NormalizeApproveHost(h); err == nil {
					c.hosts = append(c.hosts, n)
				}
			}
			for name, g := range w.Args {
				p, err := policy.ArgPath(name)
				if err == nil {
					c.args = append(c.args, argCond{name: name, path: p, glob: g})
				}
			}
			sortArgs(c.args)
		}
		out.rules = append(out.rules, c)
	}
	return out
}

func sortArgs(a []argCond) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].name < a[j-1].name; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// Names reports whether some rule names tool id: the calls of other
// tools never wait, and need no more work.
func (rs *Rules) Names(id string) bool {
	if rs == nil {
		return false
	}
	if v, ok := rs.named.Load(id); ok {
		return v.(bool)
	}
	named := false
	for i := range rs.rules {
		for _, g := range rs.rules[i].tools {
			if policy.MatchToolGlob(g, id) {
				named = true
			}
		}
	}
	if rs.nNamed.Load() < maxNamed {
		if _, loaded := rs.named.LoadOrStore(id, named); !loaded {
			rs.nNamed.Add(1)
		}
	}
	return named
}

// Match is the first rule a call matches.
type Match struct {
	// Rule is the rule's index in the policy's approve list.
	Rule int `json:"rule"`
	// Risks are the conditions that held, in the rule's order: "write",
	// "hosts:<glob>", "credentials", "args:<name>". Empty for a rule
	// without conditions.
	Risks []string `json:"risks"`
	// Timeout is how long the call waits for a decision.
	Timeout time.Duration `json:"-"`
}

// Key is what an "allow for N minutes" decision is remembered by with
// the tenant and tool: the rule and the conditions that held.
func (m Match) Key() string {
	return strconv.Itoa(m.Rule) + "|" + strings.Join(m.Risks, ",")
}

// Match returns the first rule the call matches. Conditions are ANDed;
// arguments that are not a JSON object match no args condition.
func (rs *Rules) Match(c Call) (Match, bool) {
	if rs == nil {
		return Match{}, false
	}
	var args any
	decoded := false
	for i := range rs.rules {
		r := &rs.rules[i]
		named := false
		for _, g := range r.tools {
			if policy.MatchToolGlob(g, c.Tool) {
				named = true
				break
			}
		}
		if !named {
			continue
		}
		risks := []string{}
		if r.write {
			if c.Grant == nil || !c.Grant.WritesWorkspace() {
				continue
			}
			risks = append(risks, RiskWrite)
		}
		if len(r.hosts) > 0 {
			hit := ""
			if c.Grant != nil {
				for _, h := range r.hosts {
					if c.Grant.ReachesHost(h) {
						hit = h
						break
					}
				}
			}
			if hit == "" {
				continue
			}
			risks = append(risks, RiskHosts+":"+hit)
		}
		if r.creds {
			if len(c.Credentials) == 0 {
				continue
			}
			risks = append(risks, RiskCredentials)
		}
		if len(r.args) > 0 {
			if !decoded {
				args, decoded = decodeArgs(c.Args), true
			}
			ok := true
			for _, a := range r.args {
				if !argMatches(args, a) {
					ok = false
					break
				}
				risks = append(risks, RiskArgs+":"+a.name)
			}
			if !ok {
				continue
			}
		}
		return Match{Rule: r.index, Risks: risks, Timeout: r.timeout}, true
	}
	return Match{}, false
}

func decodeArgs(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

// argMatches follows the condition's path into the arguments and
// matches the value there: a string as it is, a number or boolean as its
// JSON text, an array when any element matches; an object, null or a
// missing argument never matches.
func argMatches(args any, a argCond) bool {
	v := args
	for _, tok := range a.path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != tok {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	return valueMatches(a.glob, v, 0)
}

func valueMatches(glob string, v any, depth int) bool {
	switch x := v.(type) {
	case string:
		return policy.MatchArgGlob(glob, x)
	case json.Number:
		return policy.MatchArgGlob(glob, x.String())
	case bool:
		return policy.MatchArgGlob(glob, strconv.FormatBool(x))
	case []any:
		if depth > 0 {
			return false
		}
		for _, e := range x {
			if valueMatches(glob, e, depth+1) {
				return true
			}
		}
	}
	return false
}
