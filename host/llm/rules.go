package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The providers' documented rules for a request's tools and messages,
// in code, so tests (and the replay provider) refuse what the real APIs
// refuse. docs/AGENT.md lists them with the pages they come from.
var (
	// openAIName and anthropicName: ^[a-zA-Z0-9_-]{1,64}$ (both APIs'
	// function / tool name rule).
	openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// geminiName: starts with a letter or an underscore; letters,
	// digits, underscores, colons, dots and dashes; at most 64.
	geminiName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)
	// anthropicID: tool_use ids.
	anthropicID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

// maxOpenAITools is the most tools one Chat Completions request takes.
const maxOpenAITools = 128

// openAIStrictKeys are the schema keywords OpenAI's strict mode accepts.
var openAIStrictKeys = []string{"type", "properties", "required", "additionalProperties", "items", "enum", "const",
	"description", "title", "anyOf", "$ref", "$defs", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
	"exclusiveMaximum", "multipleOf", "minItems", "maxItems"}

// geminiSchemaKeys are the fields of Gemini's OpenAPI-style Schema (the
// `parameters` field); any other name is refused as unknown.
var geminiSchemaKeys = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
	"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
	"propertyOrdering", "default", "items", "minimum", "maximum"}

// CheckRequest checks a request body meant for provider ("openai",
// "anthropic" or "gemini") against that provider's documented rules for
// tool definitions and tool-call messages. Every broken rule is reported.
func CheckRequest(provider string, body []byte) error {
	var b map[string]any
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("%s: the body is not a JSON object: %w", provider, err)
	}
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(provider+": "+f, a...)) }
	tools, hasTools := b["tools"]
	list, _ := tools.([]any)
	if hasTools && len(list) == 0 {
		bad("tools is present but not a non-empty array (an empty array is refused: leave the field out)")
	}
	seen := map[string]bool{}
	name := func(i int, n any, re *regexp.Regexp) string {
		s, _ := n.(string)
		if !re.MatchString(s) {
			bad("tools[%d]: name %q does not match %s", i, s, re)
		}
		if seen[s] {
			bad("tools[%d]: name %q is used twice", i, s)
		}
		seen[s] = true
		return s
	}
	switch provider {
	case "openai":
		if len(list) > maxOpenAITools {
			bad("%d tools: at most %d", len(list), maxOpenAITools)
		}
		for i, t := range list {
			tm, _ := t.(map[string]any)
			fn, _ := tm["function"].(map[string]any)
			if tm["type"] != "function" || fn == nil {
				bad("tools[%d]: not {type: function, function: {…}}", i)
				continue
			}
			n := name(i, fn["name"], openAIName)
			params, ok := fn["parameters"].(map[string]any)
			if !ok {
				if _, present := fn["parameters"]; present {
					bad("tools[%d] (%s): parameters is not a JSON Schema object", i, n)
				}
				continue
			}
			for _, e := range topLevel(params, "oneOf", "anyOf", "allOf", "enum", "not") {
				bad("tools[%d] (%s): parameters %s", i, n, e)
			}
			if fn["strict"] == true {
				for _, e := range strictErrors(params, "parameters") {
					bad("tools[%d] (%s): strict: %s", i, n, e)
				}
			}
		}
		errs = append(errs, openAIMessages(b["messages"], provider)...)
	case "anthropic":
		for i, t := range list {
			tm, _ := t.(map[string]any)
			n := name(i, tm["name"], openAIName)
			schema, ok := tm["input_schema"].(map[string]any)
			if !ok {
				bad("tools[%d] (%s): input_schema is required and must be a JSON Schema object", i, n)
				continue
			}
			for _, e := range topLevel(schema, "oneOf", "anyOf", "allOf") {
				bad("tools[%d] (%s): input_schema %s", i, n, e)
			}
		}
		if _, ok := b["max_tokens"].(float64); !ok {
			bad("max_tokens is required")
		}
		errs = append(errs, anthropicMessagesCheck(b["messages"], provider)...)
	case "gemini":
		for i, t := range list {
			tm, _ := t.(map[string]any)
			decls, _ := tm["functionDeclarations"].([]any)
			for j, d := range decls {
				dm, _ := d.(map[string]any)
				n := name(j, dm["name"], geminiName)
				p, hasP := dm["parameters"]
				pj, hasPJ := dm["parametersJsonSchema"]
				if hasP && hasPJ {
					bad("tools[%d].functionDeclarations[%d] (%s): parameters and parametersJsonSchema are mutually exclusive", i, j, n)
				}
				if hasPJ {
					s, _ := pj.(map[string]any)
					if s == nil || s["type"] != "object" {
						bad("tools[%d].functionDeclarations[%d] (%s): parametersJsonSchema must describe an object", i, j, n)
					}
				}
				if hasP {
					for _, e := range geminiSchemaErrors(p, "parameters") {
						bad("tools[%d].functionDeclarations[%d] (%s): %s", i, j, n, e)
					}
				}
			}
		}
	default:
		return fmt.Errorf("no rules for provider %q", provider)
	}
	return errors.Join(errs...)
}

// topLevel reports the type of a parameter schema that is not object and
// the keywords of kws it has at its top.
func topLevel(s map[string]any, kws ...string) []string {
	var out []string
	if s["type"] != "object" {
		out = append(out, fmt.Sprintf("must be type: object at the top, not %v", s["type"]))
	}
	for _, kw := range kws {
		if _, ok := s[kw]; ok {
			out = append(out, "has "+kw+" at the top level")
		}
	}
	return out
}

// strictErrors checks OpenAI's strict subset: known keywords only, and
// every object closed with every property required.
func strictErrors(s map[string]any, at string) []string {
	var out []string
	for k, v := range s {
		if !slices.Contains(openAIStrictKeys, k) {
			out = append(out, fmt.Sprintf("%s: keyword %s is not supported", at, k))
			continue
		}
		switch k {
		case "properties", "$defs":
			m, _ := v.(map[string]any)
			for name, sub := range m {
				ss, _ := sub.(map[string]any)
				out = append(out, strictErrors(ss, at+"."+name)...)
			}
		case "items":
			ss, _ := v.(map[string]any)
			out = append(out, strictErrors(ss, at+".items")...)
		case "anyOf":
			list, _ := v.([]any)
			for i, sub := range list {
				ss, _ := sub.(map[string]any)
				out = append(out, strictErrors(ss, fmt.Sprintf("%s.anyOf[%d]", at, i))...)
			}
		}
	}
	if s["type"] == "object" {
		if s["additionalProperties"] != false {
			out = append(out, at+": additionalProperties must be false")
		}
		props, _ := s["properties"].(map[string]any)
		req := map[string]bool{}
		for _, r := range stringList(s["required"]) {
			req[r] = true
		}
		for p := range props {
			if !req[p] {
				out = append(out, fmt.Sprintf("%s: property %s must be required (make it nullable instead)", at, p))
			}
		}
	}
	return out
}

// geminiSchemaErrors checks a `parameters` Schema for field names the
// API does not know (it refuses them as unknown).
func geminiSchemaErrors(v any, at string) []string {
	s, ok := v.(map[string]any)
	if !ok {
		return []string{at + " is not an object"}
	}
	var out []string
	for k, sub := range s {
		if !slices.Contains(geminiSchemaKeys, k) {
			out = append(out, fmt.Sprintf("%s: unknown field %s", at, k))
			continue
		}
		switch k {
		case "properties":
			m, _ := sub.(map[string]any)
			for name, p := range m {
				out = append(out, geminiSchemaErrors(p, at+"."+name)...)
			}
		case "items":
			out = append(out, geminiSchemaErrors(sub, at+".items")...)
		}
	}
	return out
}

// openAIMessages checks the pairing of tool calls and results: every
// tool message answers a call of the assistant message before it, and
// every call is answered before the next non-tool message.
func openAIMessages(v any, provider string) []error {
	msgs, _ := v.([]any)
	var errs []error
	open := map[string]bool{}
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		if role != "tool" && len(open) > 0 {
			errs = append(errs, fmt.Errorf("%s: messages[%d]: tool calls %s have no tool message answering them", provider, i, strings.Join(sortedSet(open), ", ")))
			open = map[string]bool{}
		}
		switch role {
		case "assistant":
			calls, _ := mm["tool_calls"].([]any)
			for _, c := range calls {
				cm, _ := c.(map[string]any)
				id, _ := cm["id"].(string)
				fn, _ := cm["function"].(map[string]any)
				args, _ := fn["arguments"].(string)
				if id == "" || !json.Valid([]byte(args)) {
					errs = append(errs, fmt.Errorf("%s: messages[%d]: a tool call needs an id and JSON arguments", provider, i))
				}
				open[id] = true
			}
			if mm["content"] == nil && len(calls) == 0 {
				errs = append(errs, fmt.Errorf("%s: messages[%d]: an assistant message needs content or tool calls", provider, i))
			}
		case "tool":
			id, _ := mm["tool_call_id"].(string)
			if !open[id] {
				errs = append(errs, fmt.Errorf("%s: messages[%d]: tool message for %q does not follow an assistant message calling it", provider, i, id))
			}
			delete(open, id)
		case "system", "user", "developer":
		default:
			errs = append(errs, fmt.Errorf("%s: messages[%d]: unknown role %q", provider, i, role))
		}
	}
	return errs
}

// anthropicMessagesCheck checks Anthropic's conversation rules: roles
// alternate starting with user, no empty text block, tool_use ids unique,
// and every tool_use is answered by a tool_result in the next (user)
// message.
func anthropicMessagesCheck(v any, provider string) []error {
	msgs, _ := v.([]any)
	var errs []error
	var pending []string
	prev := ""
	used := map[string]bool{}
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		if i == 0 && role != "user" {
			errs = append(errs, fmt.Errorf("%s: messages[0]: the first message must be the user's", provider))
		}
		if role == prev {
			errs = append(errs, fmt.Errorf("%s: messages[%d]: two %s messages in a row", provider, i, role))
		}
		prev = role
		blocks, _ := mm["content"].([]any)
		results := map[string]bool{}
		var uses []string
		for _, bl := range blocks {
			bm, _ := bl.(map[string]any)
			switch bm["type"] {
			case "text":
				if t, _ := bm["text"].(string); t == "" {
					errs = append(errs, fmt.Errorf("%s: messages[%d]: text content blocks must be non-empty", provider, i))
				}
			case "tool_use":
				id, _ := bm["id"].(string)
				if !anthropicID.MatchString(id) {
					errs = append(errs, fmt.Errorf("%s: messages[%d]: tool_use id %q does not match %s", provider, i, id, anthropicID))
				}
				if _, ok := bm["input"].(map[string]any); !ok {
					errs = append(errs, fmt.Errorf("%s: messages[%d]: tool_use input must be an object", provider, i))
				}
				if used[id] {
					errs = append(errs, fmt.Errorf("%s: messages[%d]: tool_use ids must be unique: %q", provider, i, id))
				}
				used[id] = true
				uses = append(uses, id)
			case "tool_result":
				id, _ := bm["tool_use_id"].(string)
				results[id] = true
			}
		}
		for id := range results {
			if !slices.Contains(pending, id) {
				errs = append(errs, fmt.Errorf("%s: messages[%d]: tool_result for %q answers no tool_use of the previous message", provider, i, id))
			}
		}
		for _, id := range pending {
			if !results[id] {
				errs = append(errs, fmt.Errorf("%s: messages[%d]: tool_use ids were found without tool_result blocks immediately after: %s", provider, i, id))
			}
		}
		pending = uses
	}
	return errs
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// CheckTools checks req against the rules of OpenAI, Anthropic and
// Gemini at once, as each provider here would send it: a definition one
// of them refuses is refused.
func CheckTools(req Request) error {
	var errs []error
	for _, p := range []struct {
		name string
		body map[string]any
	}{{"openai", OpenAIBody(req, false)}, {"anthropic", AnthropicBody(req, 1024, false)}, {"gemini", GeminiBody(req)}} {
		b, err := json.Marshal(p.body)
		if err != nil {
			return err
		}
		errs = append(errs, CheckRequest(p.name, b))
	}
	return errors.Join(errs...)
}
