package policy

import (
	"errors"
	"fmt"
	"github.com/agenthost/agenthost/host/toolpack"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Error is one problem in a policy, located by file and JSON pointer
// (RFC 6901) into the document, e.g. "/tools/core:echo/limits/max".
type Error struct {
	File    string // "" for a policy not read from a file
	Pointer string // "" when the problem is not at one place
	// Line is the line of the file the pointer is at, for the approve
	// rules' problems; 0 when not given.
	Line int
	Err  error
}

// Error implements error as "policy FILE: POINTER: reason", or "policy
// FILE:LINE: POINTER: reason" when the line is known.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("policy")
	if e.File != "" {
		b.WriteByte(' ')
		b.WriteString(e.File)
	}
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Pointer != "" {
		b.WriteString(e.Pointer)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying reason.
func (e *Error) Unwrap() error { return e.Err }

var toolIDPattern = regexp.MustCompile(`^[a-z][a-z0-9._-]*:[a-z][a-z0-9._-]*$`)

// validEnvName reports whether s is an environment variable name:
// [A-Za-z_][A-Za-z0-9_]*.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// pointer builds a JSON pointer from tokens, escaping "~" and "/".
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// validator collects problems.
type validator struct {
	file string
	errs []error
}

func (v *validator) add(ptr string, format string, args ...any) {
	v.errs = append(v.errs, &Error{File: v.file, Pointer: ptr, Err: fmt.Errorf(format, args...)})
}

// Validate checks the policy: path patterns, host globs, variable names,
// tool IDs, limits (defaults within the maxima, per-tool maxima within the
// policy-wide ones) and the unsupported signing keys. It returns every
// problem found, joined; each is an [*Error].
func (p *Policy) Validate() error {
	v := &validator{file: p.source}
	if strings.HasPrefix(p.Workspace, "~") {
		v.add("/workspace", "%q: \"~\" is not expanded; write an absolute path or one relative to the policy file", p.Workspace)
	}
	if strings.HasPrefix(p.CacheDir, "~") {
		v.add("/cacheDir", "%q: \"~\" is not expanded; write an absolute path or one relative to the policy file", p.CacheDir)
	}
	v.fileAccess("/fileAccess", p.FileAccess)
	v.hosts("/networkAccess/allowHosts", p.NetworkAccess.AllowHosts)
	v.env("/env", p.Env)
	v.limits("/limits", p.Limits)
	if p.Pool.MemoryMb < 0 {
		v.add("/pool/memoryMb", "must be 0 (no pools) or more")
	}
	if len(p.TrustedKeys) > 0 {
		s, err := toolpack.ParseTrusted(p.TrustedKeys, filepath.Dir(p.source))
		if err != nil {
			v.add("/trustedKeys", "%s", err.Error())
		}
		p.signers = s
	}
	v.mcpServers(p)
	v.approve(p.Approve)
	if p.RequireSignature && len(p.signers) == 0 {
		v.add("/requireSignature", "requireSignature needs trustedKeys: public-key lines (\"ssh-ed25519 AAAA… alice\"), allowed-signers lines (\"alice@example.com ssh-ed25519 AAAA…\") or the paths of such files")
	}
	ids := make([]string, 0, len(p.Tools))
	for id := range p.Tools {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	globalMax := p.Limits.Max.effective()
	for _, id := range ids {
		tp := p.Tools[id]
		base := pointer("tools", id)
		if !toolIDPattern.MatchString(id) {
			v.add(base, "%q is not a tool ID (namespace:name, lower-case letters, digits, \".\", \"_\", \"-\")", id)
		}
		if tp.FileAccess != nil {
			v.fileAccess(base+"/fileAccess", *tp.FileAccess)
		}
		if tp.NetworkAccess != nil {
			v.hosts(base+"/networkAccess/allowHosts", tp.NetworkAccess.AllowHosts)
		}
		v.env(base+"/env", tp.Env)
		if tp.Limits != nil {
			v.toolLimits(base+"/limits", p.Limits, *tp.Limits, globalMax)
		}
	}
	return errors.Join(v.errs...)
}

func (v *validator) fileAccess(base string, fa FileAccess) {
	for i, s := range fa.AllowRead {
		v.ceilingPattern(base+"/allowRead/"+strconv.Itoa(i), s)
	}
	for i, s := range fa.AllowWrite {
		v.ceilingPattern(base+"/allowWrite/"+strconv.Itoa(i), s)
	}
}

func (v *validator) ceilingPattern(ptr, s string) {
	if strings.HasPrefix(s, "$") {
		v.add(ptr, "%q: policy ceilings are workspace-relative; $TOOL is always readable, $TMP always writable and $CACHE granted on request", s)
		return
	}
	if err := ValidatePattern(s); err != nil {
		v.add(ptr, "%w", err)
	}
}

func (v *validator) hosts(base string, hosts []string) {
	for i, s := range hosts {
		if _, err := ParseHostRule(s); err != nil {
			v.add(base+"/"+strconv.Itoa(i), "%w", err)
		}
	}
}

func (v *validator) env(base string, names []string) {
	for i, s := range names {
		if !validEnvName(s) {
			v.add(base+"/"+strconv.Itoa(i), "%q is not an environment variable name", s)
		}
	}
}

// limits checks the policy-wide limits section.
func (v *validator) limits(base string, l LimitRange) {
	v.negative(base, l)
	v.defaultsWithin(base, l.Default.effective(), l.Max.effective(), DefaultLimits{})
}

// Upper bounds of the limits (as in abi/policy.schema.json), so that no
// conversion to bytes or nanoseconds overflows.
const (
	limitTimeoutMs      = 86_400_000
	limitMemoryMb       = 1 << 20
	limitMaxOutputBytes = 1 << 40
)

// negative reports fields of a limits section out of range.
func (v *validator) negative(base string, l LimitRange) {
	for _, f := range []struct {
		name     string
		val, top int64
	}{
		{"/default/timeoutMs", l.Default.TimeoutMs, limitTimeoutMs},
		{"/default/memoryMb", l.Default.MemoryMb, limitMemoryMb},
		{"/default/maxOutputBytes", l.Default.MaxOutputBytes, limitMaxOutputBytes},
		{"/max/timeoutMs", l.Max.TimeoutMs, limitTimeoutMs},
		{"/max/memoryMb", l.Max.MemoryMb, limitMemoryMb},
		{"/max/maxOutputBytes", l.Max.MaxOutputBytes, limitMaxOutputBytes},
	} {
		if f.val < 0 || f.val > f.top {
			v.add(base+f.name, "%d is out of range (0 to %d)", f.val, f.top)
		}
	}
}

// defaultsWithin reports defaults above their maxima. When only is not the
// zero value, only the fields set in it are checked (a per-tool section
// is blamed only for the defaults it sets itself).
func (v *validator) defaultsWithin(base string, d DefaultLimits, m MaxLimits, only DefaultLimits) {
	all := only == DefaultLimits{}
	over := func(field string, set bool, dv, mv int64) {
		if (all || set) && dv > mv {
			v.add(base+"/default/"+field, "%d exceeds the maximum %d", dv, mv)
		}
	}
	over("timeoutMs", only.TimeoutMs != 0, d.TimeoutMs, m.TimeoutMs)
	over("memoryMb", only.MemoryMb != 0, d.MemoryMb, m.MemoryMb)
	over("maxOutputBytes", only.MaxOutputBytes != 0, d.MaxOutputBytes, m.MaxOutputBytes)
	if (all || only.Fuel != 0) && m.Fuel != 0 && d.Fuel > m.Fuel {
		v.add(base+"/default/fuel", "%d exceeds the maximum %d", d.Fuel, m.Fuel)
	}
}

// toolLimits checks a per-tool limits section against the policy-wide one.
func (v *validator) toolLimits(base string, global, l LimitRange, globalMax MaxLimits) {
	v.negative(base, l)
	m := l.Max
	above := func(field string, tv, gv int64) {
		if tv > gv {
			v.add(base+"/max/"+field, "%d is above the policy-wide maximum %d; per-tool limits may only be tighter", tv, gv)
		}
	}
	above("timeoutMs", m.TimeoutMs, globalMax.TimeoutMs)
	above("memoryMb", m.MemoryMb, globalMax.MemoryMb)
	above("maxOutputBytes", m.MaxOutputBytes, globalMax.MaxOutputBytes)
	if globalMax.Fuel != 0 && m.Fuel > globalMax.Fuel {
		v.add(base+"/max/fuel", "%d is above the policy-wide maximum %d; per-tool limits may only be tighter", m.Fuel, globalMax.Fuel)
	}
	if l.Default != (DefaultLimits{}) && l.Default != (DefaultLimits{Deterministic: true}) {
		d := mergeDefaults(global.Default, l.Default).effective()
		v.defaultsWithin(base, d, mergeMax(globalMax, l.Max), l.Default)
	}
}

// overlay sets *dst to v unless v is the zero value ("not set").
func overlay[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

// mergeDefaults overlays the non-zero fields of o on d.
func mergeDefaults(d, o DefaultLimits) DefaultLimits {
	overlay(&d.TimeoutMs, o.TimeoutMs)
	overlay(&d.MemoryMb, o.MemoryMb)
	overlay(&d.MaxOutputBytes, o.MaxOutputBytes)
	overlay(&d.Fuel, o.Fuel)
	d.Deterministic = d.Deterministic || o.Deterministic
	return d
}

// mergeMax overlays the non-zero fields of o on m.
func mergeMax(m, o MaxLimits) MaxLimits {
	overlay(&m.TimeoutMs, o.TimeoutMs)
	overlay(&m.MemoryMb, o.MemoryMb)
	overlay(&m.MaxOutputBytes, o.MaxOutputBytes)
	overlay(&m.Fuel, o.Fuel)
	return m
}
