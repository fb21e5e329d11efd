package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/manifest"
)

// Capability names used in Denial.Capability.
const (
	CapTool           = "tool"
	CapRead           = "fileAccess.allowRead"
	CapWrite          = "fileAccess.allowWrite"
	CapMounts         = "fileAccess.mounts"
	CapNetwork        = "networkAccess.allowHosts"
	CapEnv            = "env"
	CapTimeout        = "limits.timeoutMs"
	CapMemory         = "limits.memoryMb"
	CapMaxOutputBytes = "limits.maxOutputBytes"
	CapFuel           = "limits.fuel"
)

// maxRequestItems bounds each requested list (reads, writes, mounts,
// hosts, env) so that a hostile manifest cannot make Grant slow; items
// beyond it are denied.
const maxRequestItems = 256

// Guest paths of the roots in a WASI guest. Mounts may not
// shadow them.
var reservedGuestPaths = [...]string{"/workspace", "/tool", "/cache", "/tmp"}

// Grant returns t's effective grant: its securityContext request
// intersected with the policy, first the policy-wide ceiling, or the
// tool's own entry in tools where it sets a key. Every requested item the
// ceiling does not fully cover is recorded as a [Denial]; partly covered
// file and host requests are narrowed to the intersection. A tool with
// deny: true gets a grant with Denied set and no capabilities.
//
// env looks up the granted variables' values (nil means os.LookupEnv).
// Grant never fails: an invalid request item is denied with the reason,
// and an invalid ceiling item (in a policy that was not validated) grants
// nothing.
func (p *Policy) Grant(t *manifest.Tool, env func(string) (string, bool)) *Grant {
	if env == nil {
		env = os.LookupEnv
	}
	tp := p.Tools[t.ToolID]
	g := &Grant{
		ToolID:        t.ToolID,
		Workspace:     absDir(p.Workspace),
		ToolDir:       t.Dir,
		CacheDir:      toolCacheDir(p.CacheDir, t.ToolID, absDir(p.Workspace)),
		AllowDegraded: p.Isolation.AllowDegraded,
	}
	sc := t.SecurityContext
	if sc == nil {
		sc = &manifest.SecurityContext{}
	}
	nr, nw := 2, 1
	if fa := sc.FileAccess; fa != nil {
		nr += len(fa.AllowRead)
		nw += len(fa.AllowWrite)
	}
	g.Read = append(make([]PathRule, 0, nr), PathRule{Root: RootTool, Pattern: "**"}, PathRule{Root: RootTmp, Pattern: "**"})
	g.Write = append(make([]PathRule, 0, nw), PathRule{Root: RootTmp, Pattern: "**"})
	if tp.Deny {
		g.Limits = p.grantLimits(g, tp.Limits, sc.Limits)
		g.Denied = true
		g.Read, g.Write = nil, nil
		g.Denials = []Denial{{Capability: CapTool, Requested: t.ToolID, Reason: "the policy denies this tool (tools." + t.ToolID + ".deny)"}}
		return g
	}

	readC, writeC := p.FileAccess.AllowRead, p.FileAccess.AllowWrite
	hostsC, private := p.NetworkAccess.AllowHosts, p.NetworkAccess.AllowPrivateAddresses
	envC := p.Env
	readWhere, writeWhere, hostsWhere, envWhere := "the policy's fileAccess.allowRead", "the policy's fileAccess.allowWrite", "the policy's networkAccess.allowHosts", "the policy's env"
	if fa := tp.FileAccess; fa != nil {
		if fa.AllowRead != nil {
			readC, readWhere = fa.AllowRead, "the policy's tools."+t.ToolID+".fileAccess.allowRead"
		}
		if fa.AllowWrite != nil {
			writeC, writeWhere = fa.AllowWrite, "the policy's tools."+t.ToolID+".fileAccess.allowWrite"
		}
	}
	if na := tp.NetworkAccess; na != nil {
		if na.AllowHosts != nil {
			hostsC, hostsWhere = na.AllowHosts, "the policy's tools."+t.ToolID+".networkAccess.allowHosts"
		}
		if na.AllowPrivateAddresses != nil {
			private = *na.AllowPrivateAddresses
		}
	}
	if tp.Env != nil {
		envC, envWhere = tp.Env, "the policy's tools."+t.ToolID+".env"
	}

	if fa := sc.FileAccess; fa != nil {
		for _, s := range g.capped(CapRead, fa.AllowRead) {
			g.Read = g.grantPath(g.Read, CapRead, s, readC, readWhere, false)
		}
		for _, s := range g.capped(CapWrite, fa.AllowWrite) {
			g.Write = g.grantPath(g.Write, CapWrite, s, writeC, writeWhere, true)
		}
		g.Read = pruneRules(g.Read)
		g.Write = pruneRules(g.Write)
		g.grantMounts(fa.Mounts)
	}
	if na := sc.NetworkAccess; na != nil {
		for _, s := range g.capped(CapNetwork, na.AllowHosts) {
			g.grantHost(s, hostsC, hostsWhere)
		}
		g.AllowPrivate = private && len(g.Hosts) > 0
	}
	g.grantEnv(g.capped(CapEnv, sc.Env), envC, envWhere, env)
	g.Limits = p.grantLimits(g, tp.Limits, sc.Limits)
	g.Config = mergeConfig(t.Handler.Config, tp.Config)
	return g
}

// grantPath intersects one requested path with the ceiling and appends
// the granted rules to rules.
func (g *Grant) grantPath(rules []PathRule, capName, req string, ceiling []string, where string, write bool) []PathRule {
	r, err := ParsePathRule(req)
	if err != nil {
		return g.deny(rules, capName, req, "invalid path: "+err.Error())
	}
	switch r.Root {
	case RootTool:
		if write {
			return g.deny(rules, capName, req, "the tool folder ($TOOL) is never writable")
		}
		return rules // $TOOL/** is always readable
	case RootTmp:
		return rules // $TMP/** is always readable and writable
	case RootCache:
		if g.CacheDir == "" {
			return g.deny(rules, capName, req, "no cache folder: the policy has no cacheDir and the user cache folder is unknown")
		}
		return append(rules, r)
	}
	var got []string
	for _, c := range ceiling {
		if ValidatePattern(c) != nil {
			continue
		}
		if patternSubset(r.Pattern, c) {
			return append(rules, r)
		}
	}
	tooComplex := false
	for _, c := range ceiling {
		if ValidatePattern(c) != nil {
			continue
		}
		ps, ok := intersectPatterns(r.Pattern, c)
		if !ok {
			tooComplex = true
			continue
		}
		got = append(got, ps...)
	}
	got = prune(got)
	if len(got) == 0 {
		reason := "outside " + where
		if tooComplex {
			reason = "too complex to intersect with " + where + "; request a narrower pattern"
		}
		return g.deny(rules, capName, req, reason)
	}
	for _, p := range got {
		rules = append(rules, PathRule{Root: RootWorkspace, Pattern: p})
	}
	g.Denials = append(g.Denials, Denial{Capability: capName, Requested: req, Reason: "narrowed to " + strings.Join(got, ", ") + " by " + where})
	return rules
}

// capped returns the first maxRequestItems items, denying the rest.
func (g *Grant) capped(capName string, items []string) []string {
	if len(items) <= maxRequestItems {
		return items
	}
	g.Denials = append(g.Denials, Denial{Capability: capName, Requested: strconv.Itoa(len(items)-maxRequestItems) + " more entries",
		Reason: "only the first " + strconv.Itoa(maxRequestItems) + " entries of a list are considered"})
	return items[:maxRequestItems]
}

func (g *Grant) deny(rules []PathRule, capName, req, reason string) []PathRule {
	g.Denials = append(g.Denials, Denial{Capability: capName, Requested: req, Reason: reason})
	return rules
}

// pruneRules drops rules equal to or covered by another rule of the same
// root, keeping the first of equal ones.
func pruneRules(rules []PathRule) []PathRule {
	if len(rules) <= 2 {
		return rules
	}
	var out []PathRule
	for i, r := range rules {
		covered := false
		for j, o := range rules {
			if i == j || o.Root != r.Root {
				continue
			}
			if patternSubset(r.Pattern, o.Pattern) && (!patternSubset(o.Pattern, r.Pattern) || j < i) {
				covered = true
				break
			}
		}
		switch {
		case covered && out == nil:
			out = append(make([]PathRule, 0, len(rules)), rules[:i]...)
		case !covered && out != nil:
			out = append(out, r)
		}
	}
	if out == nil {
		return rules // nothing pruned
	}
	return out
}

// grantMounts grants the requested mounts whose folder some read or write
// rule reaches, in guest-path order.
func (g *Grant) grantMounts(mounts map[string]string) {
	if len(mounts) == 0 {
		return
	}
	guests := make([]string, 0, len(mounts))
	for gp := range mounts {
		guests = append(guests, gp)
	}
	slices.Sort(guests)
	for _, gp := range g.capped(CapMounts, guests) {
		folder := mounts[gp]
		req := gp + " -> " + folder
		if reason := checkGuestPath(gp); reason != "" {
			g.Denials = append(g.Denials, Denial{Capability: CapMounts, Requested: req, Reason: reason})
			continue
		}
		clean := path.Clean(strings.TrimPrefix(folder, "./"))
		if clean == "." {
			clean = ""
		}
		if strings.HasPrefix(folder, "/") || strings.Contains(folder, "\\") || !cleanName(clean) {
			g.Denials = append(g.Denials, Denial{Capability: CapMounts, Requested: req, Reason: "the folder must be a clean workspace-relative path inside the workspace"})
			continue
		}
		nested := false
		for _, m := range g.Mounts {
			if m.GuestPath == gp || strings.HasPrefix(gp, m.GuestPath+"/") {
				nested = true
			}
		}
		if nested {
			g.Denials = append(g.Denials, Denial{Capability: CapMounts, Requested: req, Reason: "overlaps another mount"})
			continue
		}
		if !g.CanList(RootWorkspace, clean) {
			g.Denials = append(g.Denials, Denial{Capability: CapMounts, Requested: req, Reason: "no granted read or write rule reaches workspace folder " + strconv.Quote(clean)})
			continue
		}
		g.Mounts = append(g.Mounts, Mount{GuestPath: gp, Folder: clean})
	}
}

// checkGuestPath returns why a mount's guest path is refused, or "".
func checkGuestPath(gp string) string {
	if !strings.HasPrefix(gp, "/") || path.Clean(gp) != gp || gp == "/" || strings.ContainsAny(gp, "\\\x00") {
		return "the guest path must be a clean absolute path other than /"
	}
	for _, r := range reservedGuestPaths {
		if gp == r || strings.HasPrefix(gp, r+"/") {
			return "the guest path is inside the reserved " + r
		}
	}
	return ""
}

// grantHost intersects one requested host with the ceiling.
func (g *Grant) grantHost(req string, ceiling []string, where string) {
	r, err := ParseHostRule(req)
	if err != nil {
		g.Denials = append(g.Denials, Denial{Capability: CapNetwork, Requested: req, Reason: "invalid host: " + err.Error()})
		return
	}
	var got []HostRule
	for _, cs := range ceiling {
		c, err := ParseHostRule(cs)
		if err != nil {
			continue
		}
		x, ok := intersectHostRules(r, c)
		if !ok {
			continue
		}
		if x == r {
			g.addHost(r)
			return
		}
		got = append(got, x)
	}
	// Keep only the broadest of the partial intersections.
	var kept []HostRule
	for i, x := range got {
		covered := false
		for j, y := range got {
			if i != j && y.covers(x) && (!x.covers(y) || j < i) {
				covered = true
				break
			}
		}
		if !covered {
			kept = append(kept, x)
		}
	}
	if len(kept) == 0 {
		g.Denials = append(g.Denials, Denial{Capability: CapNetwork, Requested: req, Reason: "not covered by " + where})
		return
	}
	names := make([]string, len(kept))
	for i, x := range kept {
		g.addHost(x)
		names[i] = x.String()
	}
	g.Denials = append(g.Denials, Denial{Capability: CapNetwork, Requested: req, Reason: "narrowed to " + strings.Join(names, ", ") + " by " + where})
}

func (g *Grant) addHost(r HostRule) {
	for _, h := range g.Hosts {
		if h.covers(r) {
			return
		}
	}
	g.Hosts = append(g.Hosts, r)
}

// grantEnv grants the requested variables the ceiling lists.
func (g *Grant) grantEnv(req, ceiling []string, where string, lookup func(string) (string, bool)) {
	for _, name := range req {
		switch {
		case !validEnvName(name):
			g.Denials = append(g.Denials, Denial{Capability: CapEnv, Requested: name, Reason: "not an environment variable name"})
		case !slices.Contains(ceiling, name):
			g.Denials = append(g.Denials, Denial{Capability: CapEnv, Requested: name, Reason: "not listed in " + where})
		case slices.Contains(g.EnvNames, name):
		default:
			g.EnvNames = append(g.EnvNames, name)
			if v, ok := lookup(name); ok {
				if g.Env == nil {
					g.Env = make(map[string]string, len(req))
				}
				g.Env[name] = v
			}
		}
	}
	slices.Sort(g.EnvNames)
}

// grantLimits clamps the requested limits to the maxima (the tool's own,
// within the policy's) and fills what is not requested from the defaults.
func (p *Policy) grantLimits(g *Grant, tl *LimitRange, req *manifest.Limits) Limits {
	def := p.Limits.Default
	maxl := p.Limits.Max.effective()
	if tl != nil {
		def = mergeDefaults(def, tl.Default)
		maxl.TimeoutMs = tighter(maxl.TimeoutMs, tl.Max.TimeoutMs)
		maxl.MemoryMb = tighter(maxl.MemoryMb, tl.Max.MemoryMb)
		maxl.MaxOutputBytes = tighter(maxl.MaxOutputBytes, tl.Max.MaxOutputBytes)
		if tl.Max.Fuel != 0 && (maxl.Fuel == 0 || tl.Max.Fuel < maxl.Fuel) {
			maxl.Fuel = tl.Max.Fuel
		}
	}
	def = def.effective()
	var r manifest.Limits
	if req != nil {
		r = *req
	}
	timeout := g.clamp(CapTimeout, r.TimeoutMs, def.TimeoutMs, min(maxl.TimeoutMs, limitTimeoutMs))
	mem := g.clamp(CapMemory, r.MemoryMb, def.MemoryMb, min(maxl.MemoryMb, limitMemoryMb))
	out := g.clamp(CapMaxOutputBytes, r.MaxOutputBytes, def.MaxOutputBytes, min(maxl.MaxOutputBytes, limitMaxOutputBytes))
	fuel := r.Fuel
	switch {
	case fuel == 0:
		fuel = def.Fuel
		if maxl.Fuel != 0 && (fuel == 0 || fuel > maxl.Fuel) {
			fuel = maxl.Fuel
		}
	case maxl.Fuel != 0 && fuel > maxl.Fuel:
		g.Denials = append(g.Denials, Denial{Capability: CapFuel, Requested: strconv.FormatUint(fuel, 10), Reason: "above the policy maximum " + strconv.FormatUint(maxl.Fuel, 10) + "; clamped"})
		fuel = maxl.Fuel
	}
	return Limits{
		Timeout:        time.Duration(timeout) * time.Millisecond,
		MemoryBytes:    uint64(mem) << 20,
		Fuel:           fuel,
		MaxOutputBytes: out,
		Deterministic:  r.Deterministic || def.Deterministic,
	}
}

// clamp returns the requested value within max (recording a denial when
// it is above), or the default within max when nothing was requested.
func (g *Grant) clamp(capName string, req, def, maxv int64) int64 {
	if req <= 0 {
		return min(def, maxv)
	}
	if req > maxv {
		g.Denials = append(g.Denials, Denial{Capability: capName, Requested: strconv.FormatInt(req, 10), Reason: "above the policy maximum " + strconv.FormatInt(maxv, 10) + "; clamped"})
		return maxv
	}
	return req
}

// tighter returns the per-tool maximum t when it is set and below g.
func tighter(g, t int64) int64 {
	if t > 0 && t < g {
		return t
	}
	return g
}

// mergeConfig overlays the policy's per-tool config on handler.config.
// When only one side has entries its map is shared, not copied: a Grant
// is immutable.
func mergeConfig(base, over map[string]string) map[string]string {
	switch {
	case len(base) == 0 && len(over) == 0:
		return nil
	case len(over) == 0:
		return base
	case len(base) == 0:
		return over
	}
	m := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

// absDir returns dir as an absolute path ("" = the current directory).
func absDir(dir string) string {
	if filepath.IsAbs(dir) {
		return dir
	}
	if dir == "" {
		dir = "."
	}
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}

// toolCacheDir returns <cacheDir>/tools/<namespace>/<name>/<workspace key>,
// with every character outside [a-z0-9._-] replaced by "_" ("" without a
// cache dir). The workspace key is the first 16 hex digits of the SHA-256
// of the workspace's absolute path: a tool's $CACHE is per tool and per
// workspace, so two policies (two tenants) with different workspaces never
// share one.
func toolCacheDir(cacheDir, id, workspace string) string {
	if cacheDir == "" {
		return ""
	}
	return filepath.Join(toolCacheBase(cacheDir, id), workspaceKey(workspace))
}

// workspaceKey names a workspace in cache paths.
func workspaceKey(workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	return "ws-" + hex.EncodeToString(sum[:8])
}

func toolCacheBase(cacheDir, id string) string {
	ns, name, ok := strings.Cut(id, ":")
	if !ok {
		ns, name = "_", id
	}
	sep := string(filepath.Separator)
	if !filepath.IsAbs(cacheDir) || strings.Contains(cacheDir, sep+sep) || strings.HasSuffix(cacheDir, sep) {
		return filepath.Join(cacheDir, "tools", sanitizeSegment(ns), sanitizeSegment(name))
	}
	return cacheDir + sep + "tools" + sep + sanitizeSegment(ns) + sep + sanitizeSegment(name)
}

func sanitizeSegment(s string) string {
	clean := s != "" && s[0] != '.'
	for i := 0; clean && i < len(s); i++ {
		c := s[i]
		clean = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if clean {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		b = append([]byte{'_'}, b...)
	}
	return string(b)
}
