// Package policy reads the operator's policy file and turns a tool's
// requested securityContext into its effective [Grant]: request ∩ ceiling,
// with every denial recorded.
package policy
