package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/itchyny/gojq"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
)

// Limits of the arguments.
const (
	defaultLimit = 1000
	maxLimit     = 100000
)

// Input is the arguments object of json:query.
type Input struct {
	Filter    string                     `json:"filter"`
	Input     json.RawMessage            `json:"input,omitempty"`
	InputText *string                    `json:"inputText,omitempty"`
	Variables map[string]json.RawMessage `json:"variables,omitempty"`
	Limit     *int                       `json:"limit,omitempty"`
}

// Output is the result of json:query: every value the filter produced, in
// order, for every input value.
type Output struct {
	Results   []any `json:"results"`
	Count     int   `json:"count"`
	Truncated bool  `json:"truncated"`
}

// Query runs in.Filter over the input. The input is in.Input (any JSON
// value), or the JSON values in in.InputText (one or more, e.g. JSON
// Lines), or null when neither is given (like jq -n). Variables become
// $name in the filter. $ENV and env are empty, and modules cannot be
// imported.
func Query(ctx context.Context, in Input) (Output, error) {
	limit := defaultLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > maxLimit {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "limit must be between 1 and %d, got %d", maxLimit, limit)
	}
	inputs, err := readInputs(in)
	if err != nil {
		return Output{}, err
	}
	q, err := gojq.Parse(in.Filter)
	if err != nil {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "invalid filter: %s", err.Error())
	}
	names := make([]string, 0, len(in.Variables))
	for name := range in.Variables {
		names = append(names, name)
	}
	sort.Strings(names)
	vars := make([]string, len(names))
	values := make([]any, len(names))
	for i, name := range names {
		if !validVariable(name) {
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "variable name %q is not an identifier", name)
		}
		vars[i] = "$" + name
		v, err := decodeJSON(in.Variables[name])
		if err != nil {
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "variable %s: %s", name, err.Error())
		}
		values[i] = v
	}
	code, err := gojq.Compile(q, gojq.WithVariables(vars), gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "compile filter: %s", err.Error())
	}
	out := Output{Results: []any{}}
	for _, input := range inputs {
		iter := code.RunWithContext(ctx, input, values...)
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if err, ok := v.(error); ok {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					return out, nil
				}
				return Output{}, fmt.Errorf("filter error: %w", err)
			}
			if out.Count == limit {
				out.Truncated = true
				return out, nil
			}
			out.Results = append(out.Results, normalize(v))
			out.Count++
		}
	}
	return out, nil
}

// readInputs returns the input values of the filter.
func readInputs(in Input) ([]any, error) {
	switch {
	case in.Input != nil && in.InputText != nil:
		return nil, guest.Errorf(abi.CodeInvalidArguments, "give either input or inputText, not both")
	case in.Input != nil:
		v, err := decodeJSON(in.Input)
		if err != nil {
			return nil, guest.Errorf(abi.CodeInvalidArguments, "input: %s", err.Error())
		}
		return []any{v}, nil
	case in.InputText != nil:
		dec := json.NewDecoder(bytes.NewReader([]byte(*in.InputText)))
		dec.UseNumber()
		var vs []any
		for {
			var v any
			err := dec.Decode(&v)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, guest.Errorf(abi.CodeInvalidArguments, "inputText value %d is not JSON: %s", len(vs)+1, err.Error())
			}
			vs = append(vs, v)
		}
		if len(vs) == 0 {
			return nil, guest.Errorf(abi.CodeInvalidArguments, "inputText holds no JSON value")
		}
		return vs, nil
	}
	return []any{nil}, nil
}

// decodeJSON decodes one JSON value, keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// validVariable reports whether name is a jq identifier.
func validVariable(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// normalize makes a gojq value encodable as JSON the way jq prints it:
// NaN becomes null and infinities the largest finite doubles.
func normalize(v any) any {
	switch v := v.(type) {
	case float64:
		switch {
		case math.IsNaN(v):
			return nil
		case math.IsInf(v, 1):
			return math.MaxFloat64
		case math.IsInf(v, -1):
			return -math.MaxFloat64
		}
	case []any:
		for i := range v {
			v[i] = normalize(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = normalize(v[k])
		}
	}
	return v
}
