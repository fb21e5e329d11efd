package policy

import (
	"errors"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// approveLines puts on the errors about the approve rules the line of the
// policy file they point at (JSON is YAML, so one walk serves both), so
// that an operator editing a long list of rules finds the one at fault.
func approveLines(err error, data []byte) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var root *yaml.Node
	for _, e := range errs {
		var pe *Error
		if !errors.As(e, &pe) || !strings.HasPrefix(pe.Pointer, "/approve") {
			continue
		}
		if root == nil {
			root = &yaml.Node{}
			if yaml.Unmarshal(data, root) != nil {
				return
			}
		}
		pe.Line = lineOf(root, pe.Pointer)
	}
}

// lineOf returns the 1-based line of the node at JSON pointer ptr, or of
// its nearest ancestor that exists; 0 for an empty document.
func lineOf(root *yaml.Node, ptr string) int {
	n := root
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return 0
		}
		n = n.Content[0]
	}
	line := n.Line
	if ptr == "" || ptr == "/" {
		return line
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n.Kind {
		case yaml.MappingNode:
			next := (*yaml.Node)(nil)
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == tok {
					line, next = n.Content[i].Line, n.Content[i+1]
					break
				}
			}
			if next == nil {
				return line
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		default:
			return line
		}
	}
	return line
}
