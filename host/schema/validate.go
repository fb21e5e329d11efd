package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// FieldError is one validation failure: where (a JSON Pointer into the
// validated value, "" for the value itself) and what, in words a model can
// act on.
type FieldError struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
	// Suggestions are the closest allowed names, for an unknown property.
	Suggestions []string `json:"suggestions,omitempty"`
}

// Details is the Details of an INVALID_ARGUMENTS *abi.Error returned by
// [Schema.Validate].
type Details struct {
	Errors []FieldError `json:"errors"`
}

// maxSuggestions is how many did-you-mean names a message offers.
const maxSuggestions = 3

// Validate reports whether v (a value as decoded by encoding/json:
// map[string]any, []any, string, float64 or json.Number, bool, nil) is
// valid. It returns nil when it is, or an INVALID_ARGUMENTS *abi.Error whose
// Message lists every problem ("unknown parameter 'playerId', did you mean
// 'player_id'?; missing required parameter 'limit'") and whose Details is a
// [Details] with one [FieldError] per problem.
func (s *Schema) Validate(v any) *abi.Error {
	if s.fast != nil && s.fast.valid(v, 0) {
		return nil
	}
	err := s.js.Validate(v)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return abi.Errorf(abi.CodeInvalidArguments, "%s", err.Error())
	}
	var fes []FieldError
	s.collect(verr, &fes)
	if len(fes) == 0 {
		fes = append(fes, FieldError{Message: verr.Error()})
	}
	sort.SliceStable(fes, func(i, j int) bool { return fes[i].Pointer < fes[j].Pointer })
	fes = slices.CompactFunc(fes, func(a, b FieldError) bool {
		return a.Pointer == b.Pointer && a.Message == b.Message
	})
	msgs := make([]string, len(fes))
	for i, fe := range fes {
		msgs[i] = fe.Message
	}
	return &abi.Error{
		Code:    abi.CodeInvalidArguments,
		Message: strings.Join(msgs, "; "),
		Details: Details{Errors: fes},
	}
}

// collect flattens the santhosh error tree into field errors.
func (s *Schema) collect(e *jsonschema.ValidationError, out *[]FieldError) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			s.collect(c, out)
		}
		return
	case *kind.AdditionalProperties:
		cands := s.propertyNames(e.SchemaURL)
		for _, p := range k.Properties {
			fe := FieldError{Pointer: pointer(append(slices.Clone(e.InstanceLocation), p))}
			fe.Suggestions = Suggest(p, cands, maxSuggestions)
			fe.Message = fmt.Sprintf("unknown %s %s", s.noun(e.InstanceLocation), quote(p))
			if len(fe.Suggestions) > 0 {
				fe.Message += ", did you mean " + quoteList(fe.Suggestions) + "?"
			} else if len(cands) > 0 {
				fe.Message += " (allowed: " + quoteList(cands) + ")"
			}
			*out = append(*out, fe)
		}
		return
	case *kind.Required:
		for _, p := range k.Missing {
			*out = append(*out, FieldError{
				Pointer: pointer(append(slices.Clone(e.InstanceLocation), p)),
				Message: fmt.Sprintf("missing required %s %s", s.noun(e.InstanceLocation), quote(p)),
			})
		}
		return
	case *kind.Type:
		*out = append(*out, FieldError{
			Pointer: pointer(e.InstanceLocation),
			Message: fmt.Sprintf("%s must be %s, got %s", s.subject(e.InstanceLocation),
				strings.Join(article(k.Want), " or "), article([]string{k.Got})[0]),
		})
		return
	case *kind.Enum:
		*out = append(*out, FieldError{
			Pointer: pointer(e.InstanceLocation),
			Message: fmt.Sprintf("%s must be one of %s, got %s", s.subject(e.InstanceLocation),
				jsonList(k.Want), jsonText(k.Got)),
		})
		return
	case *kind.Const:
		*out = append(*out, FieldError{
			Pointer: pointer(e.InstanceLocation),
			Message: fmt.Sprintf("%s must be %s, got %s", s.subject(e.InstanceLocation),
				jsonText(k.Want), jsonText(k.Got)),
		})
		return
	case *kind.AnyOf, *kind.OneOf:
		if oo, ok := k.(*kind.OneOf); ok && len(oo.Subschemas) > 1 {
			*out = append(*out, FieldError{
				Pointer: pointer(e.InstanceLocation),
				Message: fmt.Sprintf("%s matches more than one of the allowed forms (%d and %d); it must match exactly one",
					s.subject(e.InstanceLocation), oo.Subschemas[0]+1, oo.Subschemas[1]+1),
			})
			return
		}
		var alts []FieldError
		for _, c := range e.Causes {
			s.collect(c, &alts)
		}
		msgs := make([]string, len(alts))
		for i, a := range alts {
			msgs[i] = a.Message
		}
		msg := fmt.Sprintf("%s matches none of the allowed forms", s.subject(e.InstanceLocation))
		if len(msgs) > 0 {
			msg += ": " + strings.Join(msgs, " | ")
		}
		*out = append(*out, FieldError{Pointer: pointer(e.InstanceLocation), Message: msg})
		return
	case *kind.PropertyNames:
		// santhosh v6.0.3 does not copy the instance location of a
		// propertyNames error, so its pointer cannot be trusted: name the
		// property instead.
		*out = append(*out, FieldError{
			Message: fmt.Sprintf("invalid %s name %s", s.noun([]string{""}), quote(k.Property)),
		})
		return
	case *kind.FalseSchema:
		*out = append(*out, FieldError{
			Pointer: pointer(e.InstanceLocation),
			Message: fmt.Sprintf("%s is not allowed here", s.subject(e.InstanceLocation)),
		})
		return
	}
	subj := s.subject(e.InstanceLocation)
	var msg string
	switch k := e.ErrorKind.(type) {
	case *kind.Minimum:
		msg = fmt.Sprintf("%s must be >= %s, got %s", subj, ratText(k.Want), ratText(k.Got))
	case *kind.Maximum:
		msg = fmt.Sprintf("%s must be <= %s, got %s", subj, ratText(k.Want), ratText(k.Got))
	case *kind.ExclusiveMinimum:
		msg = fmt.Sprintf("%s must be > %s, got %s", subj, ratText(k.Want), ratText(k.Got))
	case *kind.ExclusiveMaximum:
		msg = fmt.Sprintf("%s must be < %s, got %s", subj, ratText(k.Want), ratText(k.Got))
	case *kind.MinLength:
		msg = fmt.Sprintf("%s must be at least %d characters long, got %d", subj, k.Want, k.Got)
	case *kind.MaxLength:
		msg = fmt.Sprintf("%s must be at most %d characters long, got %d", subj, k.Want, k.Got)
	case *kind.MinItems:
		msg = fmt.Sprintf("%s must have at least %d items, got %d", subj, k.Want, k.Got)
	case *kind.MaxItems:
		msg = fmt.Sprintf("%s must have at most %d items, got %d", subj, k.Want, k.Got)
	case *kind.Pattern:
		msg = fmt.Sprintf("%s must match the pattern %s, got %s", subj, k.Want, jsonText(k.Got))
	default:
		msg = fmt.Sprintf("%s: %s", subj, e.ErrorKind.LocalizedString(message.NewPrinter(language.English)))
	}
	*out = append(*out, FieldError{Pointer: pointer(e.InstanceLocation), Message: msg})
}

// propertyNames returns the declared property names of the schema at the
// given location, sorted.
func (s *Schema) propertyNames(loc string) []string {
	n := s.byLocation[loc]
	if n == nil {
		return nil
	}
	names := make([]string, 0, len(n.Properties))
	for k := range n.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// noun names a member of the value at loc: arguments are "parameters" at the
// top level and "properties" below.
func (s *Schema) noun(loc []string) string {
	if s.nounText != "" {
		return s.nounText
	}
	if len(loc) == 0 {
		return "parameter"
	}
	return "property"
}

// subject names the value at loc in a message.
func (s *Schema) subject(loc []string) string {
	if len(loc) == 0 {
		return "the value"
	}
	return s.noun(nil) + " " + quote(pointer(loc)[1:])
}

// ratText renders a number from the validator as decimal text.
func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.RatString()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func quote(s string) string { return "'" + s + "'" }

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}

func article(types []string) []string {
	out := make([]string, len(types))
	for i, t := range types {
		switch t {
		case "integer", "object", "array":
			out[i] = "an " + t
		case "null":
			out[i] = "null"
		default:
			out[i] = "a " + t
		}
	}
	return out
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func jsonList(vs []any) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = jsonText(v)
	}
	return strings.Join(q, ", ")
}

// pointer renders tokens as an RFC 6901 JSON Pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}
