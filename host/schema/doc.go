// Package schema compiles JSON Schemas, coerces tool arguments by a schema,
// validates them with per-field errors a model can act on, and suggests
// the closest names for misspelt parameters and tool IDs.
//
// It is built on github.com/santhosh-tekuri/jsonschema/v6. The default
// dialect is 2020-12; drafts 4, 6 and 7 are honoured through "$schema".
// Remote "$ref" loading is disabled: a schema resolves only references into
// itself, the embedded meta-schemas, and the mem:// resources registered on
// a [Compiler].
//
// The usual sequence for a tool call is [Schema.Coerce]
// then [Schema.Validate], then [Canonical] to re-encode the arguments for
// the guest:
//
//	s, err := schema.Compile(raw, "mem://tools/core:echo/parameters")
//	args = s.Coerce(args)
//	if aerr := s.Validate(args); aerr != nil {
//		// aerr.Code == abi.CodeInvalidArguments; aerr.Details is a [Details]
//	}
//	b, _ := schema.Canonical(args)
//
// Everything here is pure: no context, no I/O, safe for concurrent use once
// compiled.
package schema
