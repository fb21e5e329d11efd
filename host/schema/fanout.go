package schema

import (
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxFanout bounds how many subschemas validating one value may evaluate
// through keywords that apply to that same value ($ref, allOf, anyOf,
// oneOf, not, if / then / else, dependentSchemas). A schema that nests
// them so that the count multiplies (anyOf of two $refs to a definition
// that is again anyOf of two $refs, 16 deep, is 65,536 evaluations per
// value) is refused when it is compiled, so that loading or validating
// never hangs on a small hostile manifest.
const MaxFanout = 10_000

// checkFanout counts, for every schema reachable from root, the subschemas
// evaluated on the same value, memoised per schema so the analysis itself
// is linear in the schema's size.
func checkFanout(root *jsonschema.Schema) error {
	memo := map[*jsonschema.Schema]int{}
	const inProgress = -1
	var count func(n *jsonschema.Schema) int
	count = func(n *jsonschema.Schema) int {
		if n == nil {
			return 0
		}
		if c, ok := memo[n]; ok {
			if c == inProgress {
				// A cycle on one value ({"$ref": "#"}): the validator
				// stops it with an error at validation time, it does not
				// multiply the work.
				return 0
			}
			return c
		}
		memo[n] = inProgress
		total := 1
		for _, c := range sameValue(n) {
			total += count(c)
			if total > MaxFanout {
				total = MaxFanout + 1
				break
			}
		}
		memo[n] = total
		return total
	}
	var err error
	walk(root, func(n *jsonschema.Schema) {
		if err == nil {
			if c := count(n); c > MaxFanout {
				err = fmt.Errorf("schema at %s is too complex: validating one value may evaluate more than %d subschemas through nested $ref / allOf / anyOf / oneOf; flatten it", n.Location, MaxFanout)
			}
		}
	})
	return err
}

// sameValue lists the subschemas of n that apply to the value n applies to.
func sameValue(n *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(s ...*jsonschema.Schema) {
		for _, x := range s {
			if x != nil {
				out = append(out, x)
			}
		}
	}
	add(n.Ref, n.RecursiveRef, n.Not, n.If, n.Then, n.Else)
	if n.DynamicRef != nil {
		add(n.DynamicRef.Ref)
	}
	add(n.AllOf...)
	add(n.AnyOf...)
	add(n.OneOf...)
	for _, d := range n.DependentSchemas {
		add(d)
	}
	return out
}
