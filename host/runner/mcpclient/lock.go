// Package mcpclient imports tools from MCP servers: it starts a server
// (stdio, under the script bridge's isolation) or connects to one
// (Streamable HTTP), checks its tool definitions against the ones pinned
// in a lock file (a changed definition is a rug-pull: the tool does not
// run), and runs calls as a runner (handler type "mcp").
package mcpclient

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/host/schema"
)

// Definition is what a server says of one tool.
type Definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Hash is the SHA-256 of the definition's canonical JSON (key order and
// number spelling aside).
func (d Definition) Hash() string {
	var v any
	b, _ := json.Marshal(d)
	_ = json.Unmarshal(b, &v)
	c, err := schema.Canonical(v)
	if err != nil {
		c = b
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// Pinned is one tool's definition as pinned.
type Pinned struct {
	SHA256     string     `json:"sha256"`
	Definition Definition `json:"definition"`
}

// Lock is the lock file: per server, the tool definitions a reviewer
// accepted.
type Lock struct {
	Version int                          `json:"version"`
	Servers map[string]map[string]Pinned `json:"servers"`
}

// LockPath is the lock file beside a policy file: policy.yaml →
// policy.mcp-lock.json; "" for a policy not read from a file, which has
// no place for one.
func LockPath(policyFile string) string {
	if policyFile == "" {
		return ""
	}
	base := strings.TrimSuffix(filepath.Base(policyFile), filepath.Ext(policyFile))
	return filepath.Join(filepath.Dir(policyFile), base+".mcp-lock.json")
}

// ReadLock reads a lock file; a missing one is an empty lock.
func ReadLock(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Lock{Version: 1, Servers: map[string]map[string]Pinned{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp lock %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l Lock
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("mcp lock %s: %w", path, err)
	}
	if l.Version != 1 {
		return nil, fmt.Errorf("mcp lock %s: version %d; this host reads version 1", path, l.Version)
	}
	if l.Servers == nil {
		l.Servers = map[string]map[string]Pinned{}
	}
	for srv, tools := range l.Servers {
		for name, p := range tools {
			if p.Definition.Name != name || p.SHA256 != p.Definition.Hash() {
				return nil, fmt.Errorf("mcp lock %s: %s.%s: the pinned hash does not match its definition (edited by hand?); pin again", path, srv, name)
			}
		}
	}
	return &l, nil
}

// Pin replaces a server's pins with defs.
func (l *Lock) Pin(server string, defs []Definition) {
	m := map[string]Pinned{}
	for _, d := range defs {
		m[d.Name] = Pinned{SHA256: d.Hash(), Definition: d}
	}
	l.Servers[server] = m
}

// Write writes the lock file (sorted, indented).
func (l *Lock) Write(path string) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Diff compares a server's pins with its live definitions: one line per
// tool added, removed or changed (naming the fields that changed).
func (l *Lock) Diff(server string, live []Definition) []string {
	pinned := l.Servers[server]
	var out []string
	seen := map[string]bool{}
	for _, d := range live {
		seen[d.Name] = true
		p, ok := pinned[d.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("+ %s.%s: new tool (not pinned)", server, d.Name))
		case p.SHA256 != d.Hash():
			out = append(out, fmt.Sprintf("~ %s.%s: changed %s", server, d.Name, strings.Join(changedFields(p.Definition, d), ", ")))
		}
	}
	for name := range pinned {
		if !seen[name] {
			out = append(out, fmt.Sprintf("- %s.%s: removed", server, name))
		}
	}
	sort.Strings(out)
	return out
}

func changedFields(a, b Definition) []string {
	var out []string
	eq := func(x, y json.RawMessage) bool {
		dx, dy := Definition{InputSchema: x}, Definition{InputSchema: y}
		return dx.Hash() == dy.Hash()
	}
	if a.Title != b.Title {
		out = append(out, "title")
	}
	if a.Description != b.Description {
		out = append(out, fmt.Sprintf("description (%q → %q)", clip(a.Description), clip(b.Description)))
	}
	if !eq(a.InputSchema, b.InputSchema) {
		out = append(out, "inputSchema")
	}
	if !eq(a.OutputSchema, b.OutputSchema) {
		out = append(out, "outputSchema")
	}
	if !eq(a.Annotations, b.Annotations) {
		out = append(out, "annotations")
	}
	return out
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
