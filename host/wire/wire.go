// Package wire maps tool IDs to the names model providers and MCP accept,
// and back. Providers (OpenAI, Anthropic, Gemini) allow ^[a-zA-Z0-9_-]{1,64}$
// and MCP has no ':', so one mapping serves everywhere: ':' becomes "__",
// '.' and '/' become '_', and a name longer than 64 characters keeps its
// first 55, then '_' and 8 hex digits of the SHA-256 of the ID. The
// mapping is not reversible by itself; a [Table] keeps both directions and
// refuses two tools whose names collide.
package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// MaxLen is the longest wire name.
const MaxLen = 64

// Name returns the wire name of a tool ID.
func Name(id string) string {
	n := strings.NewReplacer(":", "__", ".", "_", "/", "_").Replace(id)
	if len(n) <= MaxLen {
		return n
	}
	sum := sha256.Sum256([]byte(id))
	return n[:55] + "_" + hex.EncodeToString(sum[:4])
}

// Table holds the wire names of a set of tool IDs, both ways.
type Table struct {
	byName map[string]string
	byID   map[string]string
}

// NewTable maps ids (each once; versions excluded). Two IDs with the same
// wire name are an error naming both: one of them must be renamed (or
// denied by the policy) before either can be offered to a model or an MCP
// client.
func NewTable(ids []string) (*Table, error) {
	t := &Table{byName: make(map[string]string, len(ids)), byID: make(map[string]string, len(ids))}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	var errs []string
	for _, id := range sorted {
		n := Name(id)
		if other, ok := t.byName[n]; ok && other != id {
			errs = append(errs, fmt.Sprintf("tools %s and %s have the same wire name %q", other, id, n))
			continue
		}
		t.byName[n] = id
		t.byID[id] = n
	}
	if len(errs) > 0 {
		return t, fmt.Errorf("wire names: %s", strings.Join(errs, "; "))
	}
	return t, nil
}

// Name returns the wire name of id, and whether the table holds it.
func (t *Table) Name(id string) (string, bool) {
	n, ok := t.byID[id]
	return n, ok
}

// ID returns the tool ID of a wire name, and whether the table holds it.
// A model may also use the ID itself: that resolves too.
func (t *Table) ID(name string) (string, bool) {
	if id, ok := t.byName[name]; ok {
		return id, true
	}
	if _, ok := t.byID[name]; ok {
		return name, true
	}
	return "", false
}

// Collisions returns the IDs that share a wire name, by that name (each
// list sorted, each ID once); a name only one ID maps to is left out.
// Such tools cannot be offered side by side to a model or an MCP client.
func Collisions(ids []string) map[string][]string {
	by := map[string][]string{}
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			by[Name(id)] = append(by[Name(id)], id)
		}
	}
	for n, group := range by {
		if len(group) < 2 {
			delete(by, n)
			continue
		}
		sort.Strings(group)
	}
	return by
}
