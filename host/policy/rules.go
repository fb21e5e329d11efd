package policy

import (
	"fmt"
	"strings"
)

// Root prefixes of requested paths. A path without one is
// relative to the workspace.
const (
	PrefixTool  = "$TOOL"
	PrefixCache = "$CACHE"
	PrefixTmp   = "$TMP"
)

// ParsePathRule parses a requested path: "data/**" (workspace),
// "$TOOL/x.json", "$CACHE/**", "$TMP/**". A bare "$TMP" stands for
// "$TMP/**". The pattern is checked with [ValidatePattern].
func ParsePathRule(s string) (PathRule, error) {
	root, pat := RootWorkspace, s
	if strings.HasPrefix(s, "$") {
		name, rest, _ := strings.Cut(s, "/")
		switch name {
		case PrefixTool:
			root = RootTool
		case PrefixCache:
			root = RootCache
		case PrefixTmp:
			root = RootTmp
		default:
			return PathRule{}, fmt.Errorf("%q: unknown root %s (want $TOOL, $CACHE or $TMP)", s, name)
		}
		pat = rest
		if pat == "" && !strings.Contains(s, "/") {
			pat = "**"
		}
	}
	if err := ValidatePattern(pat); err != nil {
		return PathRule{}, err
	}
	return PathRule{Root: root, Pattern: pat}, nil
}

// String formats the rule as ParsePathRule reads it: workspace rules bare,
// the others with their $ROOT/ prefix.
func (r PathRule) String() string {
	switch r.Root {
	case RootTool:
		return PrefixTool + "/" + r.Pattern
	case RootCache:
		return PrefixCache + "/" + r.Pattern
	case RootTmp:
		return PrefixTmp + "/" + r.Pattern
	}
	return r.Pattern
}

// Allows reports whether the grant lets the guest read (write false) or
// write (write true: create, truncate, modify, rename, remove) the file or
// folder rel under root. rel is slash-separated, relative to root, clean;
// "" or "." is the root itself. A rel that is not clean (a ".." segment, a
// leading "/", an empty or "." segment, a NUL) is refused, as is
// everything under a denied grant.
//
// Allows checks one name: the runner must resolve symlinks and map mounts
// to workspace folders before asking. It does not allocate.
func (g *Grant) Allows(root Root, rel string, write bool) bool {
	if g == nil || g.Denied {
		return false
	}
	if rel == "." {
		rel = ""
	}
	if !cleanName(rel) {
		return false
	}
	rules := g.Read
	if write {
		rules = g.Write
	}
	for i := range rules {
		if rules[i].Root == root && matchPath(rules[i].Pattern, rel) {
			return true
		}
	}
	return false
}

// CanList reports whether the folder relDir under root must be traversable
// (opened and listed) because a read or write rule can match relDir itself
// or something beneath it. With only "data/**" granted, the root and
// "data" can be listed, "other" cannot. A listing should still show only
// the entries the guest may read, write or list.
//
// CanList does not allocate.
func (g *Grant) CanList(root Root, relDir string) bool {
	if g == nil || g.Denied {
		return false
	}
	if relDir == "." {
		relDir = ""
	}
	if !cleanName(relDir) {
		return false
	}
	for _, rules := range [2][]PathRule{g.Read, g.Write} {
		for i := range rules {
			if rules[i].Root == root && couldContain(rules[i].Pattern, relDir) {
				return true
			}
		}
	}
	return false
}
