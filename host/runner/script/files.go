package script

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/host/internal/isolate"
	"github.com/agenthost/agenthost/host/policy"
)

// runtimeFiles are the system files every interpreter needs, granted
// read (and execute for the library and program folders). Paths that do
// not exist are skipped. Nobody granted them: they keep their owners
// (never idmapped), so a root-only file among them stays unreadable.
var runtimeFiles = []isolate.Rule{
	{Path: "/usr", Access: isolate.Read | isolate.Exec, KeepOwner: true},
	{Path: "/lib", Access: isolate.Read | isolate.Exec, KeepOwner: true},
	{Path: "/lib64", Access: isolate.Read | isolate.Exec, KeepOwner: true},
	{Path: "/bin", Access: isolate.Read | isolate.Exec, KeepOwner: true},
	{Path: "/etc/ld.so.cache", Access: isolate.Read, KeepOwner: true},
	{Path: "/etc/localtime", Access: isolate.Read, KeepOwner: true},
	{Path: "/etc/ssl/openssl.cnf", Access: isolate.Read, KeepOwner: true}, // node reads it at start-up
	{Path: "/dev/null", Access: isolate.Read | isolate.Write | isolate.Device},
	{Path: "/dev/zero", Access: isolate.Read, KeepOwner: true},
	{Path: "/dev/urandom", Access: isolate.Read, KeepOwner: true},
	{Path: "/dev/random", Access: isolate.Read, KeepOwner: true},
}

// Widening is a glob grant that Landlock, which grants whole path
// hierarchies, can only approximate: the script may reach every file
// under Granted, not only the files matching Pattern.
type Widening struct {
	Rule    policy.PathRule `json:"rule"`
	Write   bool            `json:"write"`
	Granted string          `json:"granted"`
	Reason  string          `json:"reason"`
}

// String renders w for logs and audit.
func (w Widening) String() string {
	mode := "read"
	if w.Write {
		mode = "write"
	}
	return fmt.Sprintf("%s %s:%s is enforced as %s of %s (%s)", mode, w.Rule.Root, w.Rule.Pattern, mode, w.Granted, w.Reason)
}

// Widenings lists, for audit, the glob grants of g that the bridge
// enforces as a wider path hierarchy, and the grants it cannot enforce at
// all (Granted empty), as they stand on disk now. Calls log the same.
func Widenings(g *policy.Grant) []Widening {
	_, ws := fileRules(g, "")
	return ws
}

// fileRules turns the grant's read and write rules into Landlock rules.
// Each pattern becomes its deepest fixed directory prefix (the segments
// before the first one holding a glob character): "data/**" and "**" are
// exact; "data/*.csv" widens to all of data/ and is reported; a prefix
// that does not exist or that resolves outside its root (a symlink out)
// grants nothing and is reported. tmp is the call's $TMP ("" when only
// reporting).
func fileRules(g *policy.Grant, tmp string) ([]isolate.Rule, []Widening) {
	var rules []isolate.Rule
	var ws []Widening
	add := func(pr policy.PathRule, write bool) {
		if pr.Root == policy.RootTmp {
			return // $TMP is always granted read-write, below.
		}
		base := rootDir(g, pr.Root, tmp)
		if base == "" {
			ws = append(ws, Widening{Rule: pr, Write: write, Reason: "root " + string(pr.Root) + " has no folder"})
			return
		}
		prefix, exact := fixedPrefix(pr.Pattern)
		realBase, err := filepath.EvalSymlinks(base)
		if err != nil {
			ws = append(ws, Widening{Rule: pr, Write: write, Reason: "root folder " + base + " does not exist"})
			return
		}
		target := filepath.Join(realBase, filepath.FromSlash(prefix))
		real, err := filepath.EvalSymlinks(target)
		if err != nil {
			ws = append(ws, Widening{Rule: pr, Write: write, Reason: target + " does not exist; Landlock grants only existing paths"})
			return
		}
		if !within(real, realBase) {
			ws = append(ws, Widening{Rule: pr, Write: write, Reason: target + " resolves outside its root"})
			return
		}
		if !exact {
			ws = append(ws, Widening{Rule: pr, Write: write, Granted: real,
				Reason: "Landlock grants whole directories, not globs"})
		} else if strings.HasSuffix(pr.Pattern, "**") {
			ws = append(ws, Widening{Rule: pr, Write: write, Granted: real,
				Reason: "Landlock grants whole directories: hidden entries beneath it (names starting with \".\"), which the pattern excludes, are reachable too"})
		} else if st, err := os.Stat(real); err == nil && st.IsDir() && !strings.HasSuffix(pr.Pattern, "**") && pr.Pattern != "" {
			ws = append(ws, Widening{Rule: pr, Write: write, Granted: real,
				Reason: "the pattern names a directory; Landlock grants everything beneath it"})
		}
		acc := isolate.Read
		if write {
			acc |= isolate.Write
		}
		rules = append(rules, isolate.Rule{Path: real, Access: acc})
	}
	for _, r := range g.Read {
		if r.Root == policy.RootTool {
			continue // always granted read below
		}
		add(r, false)
	}
	for _, r := range g.Write {
		if r.Root == policy.RootTool {
			ws = append(ws, Widening{Rule: r, Write: true, Reason: "$TOOL is never writable"})
			continue
		}
		add(r, true)
	}
	if g.ToolDir != "" {
		rules = append(rules, isolate.Rule{Path: g.ToolDir, Access: isolate.Read})
	}
	if tmp != "" {
		rules = append(rules, isolate.Rule{Path: tmp, Access: isolate.Read | isolate.Write, TmpfsBytes: tmpBytes(g)})
	}
	return rules, ws
}

// defaultTmpBytes is the most a call's $TMP holds when its grant sets no
// memory limit (as a WebAssembly tool's /tmp).
const defaultTmpBytes = 256 << 20

// tmpBytes is the most a call's $TMP may hold, where the script has a
// file system of its own (a root host): the call's memory limit. The
// folder is then in memory, never on the host's disk.
func tmpBytes(g *policy.Grant) uint64 {
	if g.Limits.MemoryBytes > 0 {
		return uint64(g.Limits.MemoryBytes)
	}
	return defaultTmpBytes
}

// rootDir is the host folder of a root.
func rootDir(g *policy.Grant, r policy.Root, tmp string) string {
	switch r {
	case policy.RootWorkspace:
		return g.Workspace
	case policy.RootTool:
		return g.ToolDir
	case policy.RootCache:
		return g.CacheDir
	case policy.RootTmp:
		return tmp
	}
	return ""
}

// fixedPrefix returns the slash-separated segments of pattern before the
// first segment holding a glob character, and whether granting that
// prefix's hierarchy is exact: the pattern is the prefix itself, or the
// prefix followed by a single "**".
func fixedPrefix(pattern string) (string, bool) {
	pattern = strings.Trim(pattern, "/")
	if pattern == "" || pattern == "**" {
		return "", true
	}
	segs := strings.Split(pattern, "/")
	var fixed []string
	for i, s := range segs {
		if strings.ContainsAny(s, "*?[{") {
			rest := segs[i:]
			return strings.Join(fixed, "/"), len(rest) == 1 && rest[0] == "**"
		}
		fixed = append(fixed, s)
	}
	return strings.Join(fixed, "/"), true
}

// within reports whether path is root or beneath it (both cleaned, real).
func within(path, root string) bool {
	if path == root {
		return true
	}
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
