package policy

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Bounds of an approve rule's timeoutSeconds.
const (
	DefaultApproveTimeoutSeconds = 120
	MaxApproveTimeoutSeconds     = 3600
)

// Bounds of an approve rule's lists, so that matching a call stays cheap.
const (
	maxApproveRules = 64
	maxApproveItems = 64
)

// ApproveRule makes the calls it matches wait for a person's decision
// before they run. A call matches when its tool ID matches one of Tools
// and every condition set in When holds (no When: every call of those
// tools). The host/approval package evaluates the rules; see
// docs/APPROVALS.md.
type ApproveRule struct {
	// Tools are tool-ID globs ("fs:write", "mcp:github.*"); "*" and "?"
	// match any characters, "[...]" a class, as in path.Match.
	Tools []string `json:"tools"`
	// When narrows the rule to the calls that meet all its conditions.
	When *ApproveWhen `json:"when,omitempty"`
	// TimeoutSeconds is how long the call waits for a decision before it
	// is refused (PERMISSION_DENIED); 0 means
	// DefaultApproveTimeoutSeconds, at most MaxApproveTimeoutSeconds.
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
}

// ApproveWhen are the conditions of an approve rule, ANDed; a nil or
// false field is no condition.
type ApproveWhen struct {
	// Write: the effective grant lets the tool write in the workspace.
	Write bool `json:"write,omitempty"`
	// Hosts: the grant's network allowlist reaches a host matching one
	// of these host globs ("api.example.com", "*.example.com", "*").
	Hosts []string `json:"hosts,omitempty"`
	// Credentials: the call gets a short-lived credential
	// (securityContext.credentials).
	Credentials bool `json:"credentials,omitempty"`
	// Args: each key names an argument, a top-level key ("path") or,
	// starting with "/", a JSON pointer ("/options/target"); its value
	// is a glob the argument must match (see [MatchArgGlob]). All
	// entries must match.
	Args map[string]string `json:"args,omitempty"`
}

// ApproveTimeout returns the rule's timeout in seconds, the default
// applied.
func (r ApproveRule) ApproveTimeout() int {
	if r.TimeoutSeconds <= 0 {
		return DefaultApproveTimeoutSeconds
	}
	return r.TimeoutSeconds
}

// validateApprove checks the approve rules: tool globs, host globs,
// argument names and globs, timeout bounds.
func (v *validator) approve(rules []ApproveRule) {
	if len(rules) > maxApproveRules {
		v.add("/approve", "%d rules: at most %d", len(rules), maxApproveRules)
		return
	}
	for i, r := range rules {
		base := "/approve/" + strconv.Itoa(i)
		if len(r.Tools) == 0 {
			v.add(base+"/tools", "a rule needs at least one tool glob (\"fs:write\", \"mcp:github.*\", \"*\")")
		}
		if len(r.Tools) > maxApproveItems {
			v.add(base+"/tools", "%d globs: at most %d", len(r.Tools), maxApproveItems)
		}
		for j, g := range r.Tools {
			if err := ValidateToolGlob(g); err != nil {
				v.add(base+"/tools/"+strconv.Itoa(j), "%s", err.Error())
			}
		}
		if r.TimeoutSeconds < 0 || r.TimeoutSeconds > MaxApproveTimeoutSeconds {
			v.add(base+"/timeoutSeconds", "%d: must be between 1 and %d (0 or absent: %d)", r.TimeoutSeconds, MaxApproveTimeoutSeconds, DefaultApproveTimeoutSeconds)
		}
		if r.When == nil {
			continue
		}
		w := r.When
		if len(w.Hosts) > maxApproveItems {
			v.add(base+"/when/hosts", "%d globs: at most %d", len(w.Hosts), maxApproveItems)
		}
		for j, h := range w.Hosts {
			if _, err := NormalizeApproveHost(h); err != nil {
				v.add(base+"/when/hosts/"+strconv.Itoa(j), "%s", err.Error())
			}
		}
		if len(w.Args) > maxApproveItems {
			v.add(base+"/when/args", "%d arguments: at most %d", len(w.Args), maxApproveItems)
		}
		keys := make([]string, 0, len(w.Args))
		for k := range w.Args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ptr := base + "/when/args/" + pointerToken(k)
			if _, err := ArgPath(k); err != nil {
				v.add(ptr, "%s", err.Error())
			}
			if err := ValidateArgGlob(w.Args[k]); err != nil {
				v.add(ptr, "%s", err.Error())
			}
		}
	}
}

// pointerToken escapes one JSON-pointer token.
func pointerToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// ValidateToolGlob checks a tool-ID glob of an approve rule: the
// characters of tool IDs plus "*", "?" and "[...]", well formed for
// path.Match.
func ValidateToolGlob(g string) error {
	if g == "" {
		return fmt.Errorf("empty tool glob")
	}
	for i := 0; i < len(g); i++ {
		c := g[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("._-:*?[]^!", c) >= 0) {
			return fmt.Errorf("tool glob %q: %q is not allowed (tool IDs are lower-case letters, digits, \".\", \"_\", \"-\" and one \":\")", g, c)
		}
	}
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("tool glob %q: %w", g, err)
	}
	return nil
}

// MatchToolGlob reports whether tool ID id matches glob g (validated by
// ValidateToolGlob).
func MatchToolGlob(g, id string) bool {
	ok, _ := path.Match(g, id)
	return ok
}

// NormalizeApproveHost checks a host glob of an approve rule's
// when.hosts: a host name, "*.suffix", "*" or an IP literal, without
// scheme or port (the condition is about names). It returns the glob
// normalised as ParseHostRule would.
func NormalizeApproveHost(h string) (string, error) {
	r, err := ParseHostRule(h)
	if err != nil {
		return "", err
	}
	if r.Scheme != "" || r.Port != 0 {
		return "", fmt.Errorf("host %q: write only the host glob, without scheme or port", h)
	}
	return r.Host, nil
}

// ReachesHost reports whether the grant's network allowlist reaches a
// host matching glob (normalised by NormalizeApproveHost): some allowed
// host rule and glob admit a common name. "*" reaches any allowed host,
// IP literals included.
func (g *Grant) ReachesHost(glob string) bool {
	for _, r := range g.Hosts {
		if glob == "*" {
			return true
		}
		if _, ok := intersectHostNames(r.Host, glob); ok {
			return true
		}
	}
	return false
}

// WritesWorkspace reports whether the grant lets the tool write in the
// workspace (or a mount of it): its own $TMP and $CACHE do not count.
func (g *Grant) WritesWorkspace() bool {
	for _, r := range g.Write {
		if r.Root == RootWorkspace {
			return true
		}
	}
	return false
}

// ArgPath parses the name of an argument in when.args: a top-level key
// ("path", one token) or, starting with "/", a JSON pointer (RFC 6901:
// "/options/target", "~1" for "/" and "~0" for "~" in a token).
func ArgPath(name string) ([]string, error) {
	if name == "" {
		return nil, fmt.Errorf("empty argument name")
	}
	if name[0] != '/' {
		return []string{name}, nil
	}
	toks := strings.Split(name[1:], "/")
	for i, t := range toks {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(t, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("argument pointer %q: \"~\" must be followed by 0 or 1", name)
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// ValidateArgGlob checks an argument glob: "/"-separated segments, each
// "**" or a path.Match pattern.
func ValidateArgGlob(g string) error {
	if g == "" {
		return fmt.Errorf("empty argument glob (\"*\" matches any value)")
	}
	if len(g) > 1024 {
		return fmt.Errorf("argument glob longer than 1024 bytes")
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("argument glob %q: %w", g, err)
		}
	}
	return nil
}

// MatchArgGlob reports whether an argument's text value matches glob g
// (validated by ValidateArgGlob). The value is cleaned first (path.Clean:
// "./a//b" is "a/b", "a/../b" is "b"); "*" matches within a segment,
// dot-files included, and "**" any number of segments. A value that
// climbs out of its folder ("../x" after cleaning) matches every glob: a
// rule cannot tell where it lands, so the call waits for a person.
func MatchArgGlob(g, value string) bool {
	if value != "" {
		value = path.Clean(value)
	}
	if value == ".." || strings.HasPrefix(value, "../") {
		return true
	}
	return matchArgSegs(strings.Split(g, "/"), strings.Split(value, "/"))
}

// matchArgSegs matches segment by segment, "**" any run of segments, in
// O(len(pat)·len(name)) whatever the pattern (no backtracking blow-up).
func matchArgSegs(pat, name []string) bool {
	// ok[j]: pat[:i] matches name[:j], for the current i.
	ok := make([]bool, len(name)+1)
	ok[0] = true
	for _, p := range pat {
		if p == "**" {
			for j := 1; j <= len(name); j++ {
				ok[j] = ok[j] || ok[j-1]
			}
			continue
		}
		for j := len(name); j >= 1; j-- {
			m, _ := path.Match(p, name[j-1])
			ok[j] = ok[j-1] && m
		}
		ok[0] = false
	}
	return ok[len(name)]
}
