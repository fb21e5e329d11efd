package schema

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path answers one question without allocating: "is this value
// certainly valid?". It is compiled from the santhosh schema graph only when
// every reachable schema uses keywords it implements exactly; a "no" (which
// also covers "cannot tell cheaply") always falls back to the full validator,
// which produces the errors. So the fast path can make validation faster but
// never changes its result.

// Type bits of the fast path.
const (
	tNull uint8 = 1 << iota
	tBool
	tInt // "integer" in a type list
	tNum
	tStr
	tArr
	tObj
)

// maxFastDepth bounds schema recursion in the fast path (a $ref cycle that
// does not descend into the value); beyond it, the full validator decides.
const maxFastDepth = 256

type fastNode struct {
	never bool  // the false schema
	types uint8 // 0: any type

	enum     []any // nil, bool, string or float64; nil slice means no enum
	hasEnum  bool
	constVal any
	hasConst bool

	props    map[string]*fastNode
	patterns []fastPattern
	required []string
	addlMode int // 0 any, 1 forbidden, 2 addl schema
	addl     *fastNode
	minProps int
	maxProps int // -1 none

	items    *fastNode
	minItems int
	maxItems int

	minLen  int
	maxLen  int
	pattern jsonschema.Regexp

	min, max, exMin, exMax float64
	hasMin, hasMax         bool
	hasExMin, hasExMax     bool

	ref   *fastNode
	allOf []*fastNode
	anyOf []*fastNode
}

// onlyTypes reports whether n constrains nothing but the value's type:
// every other field is as a schema without keywords leaves it.
func (n *fastNode) onlyTypes() bool {
	bare := *n
	bare.types = 0
	return reflect.DeepEqual(bare, fastNode{maxProps: -1, maxItems: -1, maxLen: -1})
}

type fastPattern struct {
	re   jsonschema.Regexp
	node *fastNode
}

// compileFast returns the fast-path graph of root, or nil when some
// reachable schema uses a keyword the fast path does not implement.
func compileFast(root *jsonschema.Schema) *fastNode {
	fc := fastCompiler{memo: map[*jsonschema.Schema]*fastNode{}}
	n := fc.node(root)
	if fc.failed {
		return nil
	}
	return n
}

type fastCompiler struct {
	memo   map[*jsonschema.Schema]*fastNode
	failed bool
}

// bound converts a numeric keyword to float64 and reports whether it is
// present; a value float64 cannot hold exactly marks the schema as not
// fast-path safe.
func (fc *fastCompiler) bound(r *big.Rat) (float64, bool) {
	if r == nil {
		return 0, false
	}
	f, exact := r.Float64()
	fc.failed = fc.failed || !exact
	return f, true
}

func (fc *fastCompiler) node(s *jsonschema.Schema) *fastNode {
	if fc.failed || s == nil {
		return nil
	}
	if n, ok := fc.memo[s]; ok {
		return n
	}
	n := &fastNode{maxProps: -1, maxItems: -1, maxLen: -1}
	fc.memo[s] = n
	if s.Bool != nil {
		n.never = !*s.Bool
		return n
	}
	if s.RecursiveRef != nil || s.DynamicRef != nil || s.Not != nil || len(s.OneOf) > 0 ||
		s.If != nil || s.Then != nil || s.Else != nil || s.Format != nil ||
		s.PropertyNames != nil || len(s.Dependencies) > 0 || len(s.DependentRequired) > 0 ||
		len(s.DependentSchemas) > 0 || s.UnevaluatedProperties != nil ||
		s.UniqueItems || s.Contains != nil || s.MinContains != nil || s.MaxContains != nil ||
		s.AdditionalItems != nil || len(s.PrefixItems) > 0 || s.UnevaluatedItems != nil ||
		s.ContentEncoding != nil || s.ContentMediaType != nil || s.ContentSchema != nil ||
		s.MultipleOf != nil || len(s.Extensions) > 0 ||
		(s.DraftVersion < 2019 && s.Ref != nil) {
		fc.failed = true
		return nil
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			switch t {
			case "null":
				n.types |= tNull
			case "boolean":
				n.types |= tBool
			case "integer":
				n.types |= tInt
			case "number":
				n.types |= tNum
			case "string":
				n.types |= tStr
			case "array":
				n.types |= tArr
			case "object":
				n.types |= tObj
			default:
				fc.failed = true
				return nil
			}
		}
	}
	if s.Enum != nil {
		n.hasEnum = true
		for _, v := range s.Enum.Values {
			sv, ok := scalar(v)
			if !ok {
				fc.failed = true
				return nil
			}
			n.enum = append(n.enum, sv)
		}
	}
	if s.Const != nil {
		sv, ok := scalar(*s.Const)
		if !ok {
			fc.failed = true
			return nil
		}
		n.hasConst, n.constVal = true, sv
	}
	// object
	if len(s.Properties) > 0 {
		n.props = make(map[string]*fastNode, len(s.Properties))
		for k, p := range s.Properties {
			n.props[k] = fc.node(p)
		}
	}
	for re, p := range s.PatternProperties {
		n.patterns = append(n.patterns, fastPattern{re: re, node: fc.node(p)})
	}
	n.required = s.Required
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		if !a {
			n.addlMode = 1
		}
	case *jsonschema.Schema:
		n.addlMode, n.addl = 2, fc.node(a)
	default:
		fc.failed = true
		return nil
	}
	if s.MinProperties != nil {
		n.minProps = *s.MinProperties
	}
	if s.MaxProperties != nil {
		n.maxProps = *s.MaxProperties
	}
	// array
	switch it := s.Items.(type) {
	case nil:
	case *jsonschema.Schema:
		n.items = fc.node(it)
	default:
		fc.failed = true
		return nil
	}
	if s.Items2020 != nil {
		if n.items != nil {
			fc.failed = true
			return nil
		}
		n.items = fc.node(s.Items2020)
	}
	if s.MinItems != nil {
		n.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		n.maxItems = *s.MaxItems
	}
	// string
	if s.MinLength != nil {
		n.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		n.maxLen = *s.MaxLength
	}
	n.pattern = s.Pattern
	// number
	n.min, n.hasMin = fc.bound(s.Minimum)
	n.max, n.hasMax = fc.bound(s.Maximum)
	n.exMin, n.hasExMin = fc.bound(s.ExclusiveMinimum)
	n.exMax, n.hasExMax = fc.bound(s.ExclusiveMaximum)
	// applicators
	n.ref = fc.node(s.Ref)
	for _, a := range s.AllOf {
		n.allOf = append(n.allOf, fc.node(a))
	}
	for _, a := range s.AnyOf {
		n.anyOf = append(n.anyOf, fc.node(a))
	}
	return n
}

// scalar normalises an enum/const value for the fast path: null, bool,
// string, or a number exactly representable as float64.
func scalar(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, true
	case json.Number:
		f, ok := exactNumber(x)
		return f, ok
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return nil, false
}

// exactNumber converts a JSON number text to float64 when the conversion is
// certainly exact (an integer of at most 15 digits); otherwise ok is false.
func exactNumber(n json.Number) (float64, bool) {
	s := string(n)
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 15 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// fastNum is a number seen by the fast path: its float64 value, whether
// that value is exact, and whether the number is an integer.
type fastNum struct {
	f       float64
	exact   bool
	integer bool
}

// number reads a Go numeric value. ok is false when the fast path cannot
// tell (NaN, infinities, out-of-range or exponent-form json.Number).
func number(v any) (fastNum, bool) {
	const maxExact = 1 << 53
	switch x := v.(type) {
	case float64:
		return fastNum{x, true, x == math.Trunc(x)}, !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		f := float64(x)
		return fastNum{f, true, f == math.Trunc(f)}, !math.IsNaN(f) && !math.IsInf(f, 0)
	case json.Number:
		return jsonNumber(x)
	case int:
		return fastNum{float64(x), x > -maxExact && x < maxExact, true}, true
	case int8:
		return fastNum{float64(x), true, true}, true
	case int16:
		return fastNum{float64(x), true, true}, true
	case int32:
		return fastNum{float64(x), true, true}, true
	case int64:
		return fastNum{float64(x), x > -maxExact && x < maxExact, true}, true
	case uint:
		return fastNum{float64(x), x < maxExact, true}, true
	case uint8:
		return fastNum{float64(x), true, true}, true
	case uint16:
		return fastNum{float64(x), true, true}, true
	case uint32:
		return fastNum{float64(x), true, true}, true
	case uint64:
		return fastNum{float64(x), x < maxExact, true}, true
	}
	return fastNum{}, false
}

// jsonNumber reads a json.Number without allocating. Exponent forms are
// left to the full validator.
func jsonNumber(n json.Number) (fastNum, bool) {
	s := string(n)
	if !isJSONNumber(s) || strings.ContainsAny(s, "eE") {
		return fastNum{}, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return fastNum{}, false
	}
	integer := true
	if _, frac, ok := strings.Cut(s, "."); ok {
		integer = strings.Trim(frac, "0") == ""
	}
	_, exact := exactNumber(n)
	return fastNum{f, exact, integer}, true
}

// valid reports whether v is certainly valid against n. false means invalid
// or undecided.
func (n *fastNode) valid(v any, depth int) bool {
	if n == nil || depth > maxFastDepth {
		return false
	}
	if n.never {
		return false
	}
	var f float64
	isNum := false
	switch x := v.(type) {
	case nil:
		if !n.typeOK(tNull) {
			return false
		}
	case bool:
		if !n.typeOK(tBool) {
			return false
		}
	case string:
		if !n.typeOK(tStr) || !n.stringOK(x) {
			return false
		}
	case map[string]any:
		if !n.typeOK(tObj) || !n.objectOK(x, depth) {
			return false
		}
	case []any:
		if !n.typeOK(tArr) || !n.arrayOK(x, depth) {
			return false
		}
	default:
		num, ok := number(v)
		if !ok {
			return false
		}
		isNum, f = true, num.f
		if n.types != 0 && n.types&tNum == 0 && !(n.types&tInt != 0 && num.integer) {
			return false
		}
		if !n.numberOK(num) {
			return false
		}
		if (n.hasEnum || n.hasConst) && !num.exact {
			return false
		}
	}
	if n.hasEnum || n.hasConst {
		var key any = v
		if isNum {
			key = f
		}
		if n.hasConst && !scalarEqual(key, n.constVal) {
			return false
		}
		if n.hasEnum {
			found := false
			for _, e := range n.enum {
				if scalarEqual(key, e) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	if n.ref != nil && !n.ref.valid(v, depth+1) {
		return false
	}
	for _, a := range n.allOf {
		if !a.valid(v, depth+1) {
			return false
		}
	}
	if len(n.anyOf) > 0 {
		found := false
		for _, a := range n.anyOf {
			if a.valid(v, depth+1) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (n *fastNode) typeOK(t uint8) bool { return n.types == 0 || n.types&t != 0 }

// scalarEqual compares two normalised scalars (numbers are float64).
func scalarEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	}
	return false
}

func (n *fastNode) stringOK(s string) bool {
	if n.minLen > 0 || n.maxLen >= 0 {
		l := utf8.RuneCountInString(s)
		if l < n.minLen || (n.maxLen >= 0 && l > n.maxLen) {
			return false
		}
	}
	return n.pattern == nil || n.pattern.MatchString(s)
}

// numberOK checks the bounds. For an inexact value (rounded to the nearest
// float64), only strict comparisons are conclusive: rounding is monotonic
// and the bounds are exact, so rounded > bound implies value > bound, while
// rounded == bound says nothing.
func (n *fastNode) numberOK(num fastNum) bool {
	f := num.f
	if num.exact {
		return (!n.hasMin || f >= n.min) && (!n.hasMax || f <= n.max) &&
			(!n.hasExMin || f > n.exMin) && (!n.hasExMax || f < n.exMax)
	}
	return (!n.hasMin || f > n.min) && (!n.hasMax || f < n.max) &&
		(!n.hasExMin || f > n.exMin) && (!n.hasExMax || f < n.exMax)
}

func (n *fastNode) objectOK(m map[string]any, depth int) bool {
	if len(m) < n.minProps || (n.maxProps >= 0 && len(m) > n.maxProps) {
		return false
	}
	for _, r := range n.required {
		if _, ok := m[r]; !ok {
			return false
		}
	}
	for k, v := range m {
		matched := false
		if p, ok := n.props[k]; ok {
			matched = true
			if !p.valid(v, depth+1) {
				return false
			}
		}
		for _, pp := range n.patterns {
			if pp.re.MatchString(k) {
				matched = true
				if !pp.node.valid(v, depth+1) {
					return false
				}
			}
		}
		if matched {
			continue
		}
		switch n.addlMode {
		case 1:
			return false
		case 2:
			if !n.addl.valid(v, depth+1) {
				return false
			}
		}
	}
	return true
}

func (n *fastNode) arrayOK(a []any, depth int) bool {
	if len(a) < n.minItems || (n.maxItems >= 0 && len(a) > n.maxItems) {
		return false
	}
	if n.items != nil {
		for _, v := range a {
			if !n.items.valid(v, depth+1) {
				return false
			}
		}
	}
	return true
}
