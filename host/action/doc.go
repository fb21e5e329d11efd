// Package action finds the <ACTION> block in raw LLM output and turns it into
// tool calls, following the ACTION protocol (docs/ACTION.md).
//
// Parsing is pure: [Parse] takes no context, does no I/O and never coerces
// types — every leaf argument is a string, lists are []any and objects are
// map[string]any. Schema-guided coercion happens later, in the schema layer.
//
//	res, err := action.Parse(output, action.Options{})
//	if err != nil {
//		// err is an *abi.Error with Code MALFORMED_ACTION and
//		// Details {"line","column","hint"}; res.ResponseText is still set.
//	}
//	for _, c := range res.Calls {
//		fmt.Println(c.Tool, c.Args)
//	}
//
// [Render] writes calls back as a canonical form-A block, for few-shot
// prompts and round-trip tests. The protocol as implemented, with every
// decision the protocol leaves open, is documented in docs/ACTION.md.
package action
