package manifest

import (
	"errors"
	"fmt"
	"strings"
)

// Reserved namespaces.
const (
	// NamespaceWorkflow holds workflow tools (handler type "workflow").
	NamespaceWorkflow = "workflow"
	// NamespaceMCP holds tools imported from MCP servers; no manifest
	// handler type may use it.
	NamespaceMCP = "mcp"
)

// maxIDLen bounds a tool ID.
const maxIDLen = 128

// ValidID checks the tool ID grammar: "namespace:name", both
// parts of lower-case letters, digits, '.', '_' and '-', each starting with
// a letter. It does not check reserved namespaces (see [Tool.Validate]).
func ValidID(id string) error {
	_, _, err := SplitID(id)
	return err
}

// SplitID splits a valid tool ID into its namespace and name.
func SplitID(id string) (ns, name string, err error) {
	if id == "" {
		return "", "", errors.New("tool id is empty")
	}
	if len(id) > maxIDLen {
		return "", "", fmt.Errorf("tool id %q: longer than %d bytes", id[:32]+"...", maxIDLen)
	}
	ns, name, ok := strings.Cut(id, ":")
	if !ok {
		return "", "", fmt.Errorf("tool id %q: want namespace:name (for example core:%s)", id, IDPart(id))
	}
	if err := checkIDPart(ns); err != nil {
		return "", "", fmt.Errorf("tool id %q: namespace %w", id, err)
	}
	if err := checkIDPart(name); err != nil {
		return "", "", fmt.Errorf("tool id %q: name %w", id, err)
	}
	return ns, name, nil
}

func checkIDPart(p string) error {
	if p == "" {
		return errors.New("is empty")
	}
	if c := p[0]; c < 'a' || c > 'z' {
		return fmt.Errorf("must start with a lower-case letter, not %q", rune(c))
	}
	for _, r := range p {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		case r >= 'A' && r <= 'Z':
			return fmt.Errorf("must be lower-case (%q)", r)
		default:
			return fmt.Errorf("has %q; only lower-case letters, digits, '.', '_' and '-' are allowed", r)
		}
	}
	return nil
}

// IDPart turns s into a valid namespace or name ("My Tool!" -> "my-tool"),
// for hints that suggest a valid ID: lower-case, runs of characters outside
// the grammar become one '-', and a part that would not start with a letter
// is prefixed with "t". An empty result is "tool".
func IDPart(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(b.String(), "-._")
	if out == "" {
		return "tool"
	}
	if c := out[0]; c < 'a' || c > 'z' {
		out = "t" + out
	}
	return out
}
