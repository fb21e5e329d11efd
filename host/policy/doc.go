// Package policy reads the operator's policy file and turns a tool's
// requested securityContext into its effective [Grant]: request ∩ ceiling,
// with every denial recorded. The reference of the file and of
// the matching rules is docs/POLICY.md; its JSON Schema is
// abi/policy.schema.json.
//
// A [Policy] comes from [Load] (a file), [Parse] (bytes, JSON or YAML) or
// [Default] (the built-in policy), and is checked by [Policy.Validate].
// [Policy.Grant] computes one tool's grant:
//
//	p, err := policy.Load("policy.yaml")
//	if err != nil {
//		return err // *policy.Error values naming the file and JSON pointer
//	}
//	g := p.Grant(tool, os.LookupEnv)
//	for _, d := range g.Denials {
//		fmt.Println(d.Capability, d.Requested, d.Reason)
//	}
//
// Every runner enforces the same Grant with the matching helpers here,
// which do not allocate: [Grant.Allows] and [Grant.CanList] decide file
// access name by name with the globs of [Match]; [Grant.AllowsHost]
// decides network destinations with the host rules of [ParseHostRule].
package policy
