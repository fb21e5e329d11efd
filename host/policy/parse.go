package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"sigs.k8s.io/yaml"

	"github.com/agenthost/agenthost/abi"
)

// schemaURL is where the embedded policy schema is registered; nothing is
// ever fetched from it.
const schemaURL = "mem://agenthost/policy.schema.json"

// maxSchemaErrors bounds the problems one Parse reports.
const maxSchemaErrors = 20

// Parse reads a policy from JSON or YAML. name is the file the data came
// from: it is used in error messages, decides the format by its extension
// (.json, .yaml, .yml; otherwise by content), and its folder is the base
// of a relative workspace or cacheDir.
//
// Keys that are absent take the built-in defaults of [Default]. Unknown
// keys, duplicate keys and values of the wrong type are errors naming the
// file and the JSON pointer. The result is validated with
// [Policy.Validate]; Workspace and CacheDir come back absolute.
func Parse(data []byte, name string) (*Policy, error) {
	doc, err := toJSON(data, name)
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	if err := validateSchema(doc, name); err != nil {
		approveLines(err, data)
		return nil, err
	}
	p := builtin()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return nil, &Error{File: name, Err: fmt.Errorf("decode: %w", err)}
	}
	p.source = name
	if err := p.Validate(); err != nil {
		approveLines(err, data)
		return nil, err
	}
	base := ""
	if name != "" {
		base = filepath.Dir(name)
	}
	p.resolve(base)
	return p, nil
}

// Load reads and parses the policy file at path. Relative paths in it are
// relative to the file's folder. Unlike Parse, it also checks that the
// workspace is an existing folder.
func Load(path string) (*Policy, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	p, err := Parse(data, abs)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p.Workspace)
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is not a folder", p.Workspace)
	}
	if err != nil {
		return nil, &Error{File: abs, Pointer: "/workspace", Err: err}
	}
	return p, nil
}

// toJSON converts the document to JSON, refusing duplicate keys.
func toJSON(data []byte, name string) ([]byte, error) {
	isYAML := false
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		isYAML = true
	case ".json":
	default:
		t := bytes.TrimLeft(data, " \t\r\n\ufeff")
		isYAML = len(t) == 0 || t[0] != '{'
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("{}"), nil
	}
	if isYAML {
		j, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			if strings.HasPrefix(err.Error(), "yaml: ") {
				return nil, err
			}
			return nil, fmt.Errorf("yaml: %w", err)
		}
		if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			return []byte("{}"), nil
		}
		return j, nil
	}
	if err := checkDuplicateKeys(data); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset)
			return nil, fmt.Errorf("json: line %d, column %d: %w", line, col, se)
		}
		return nil, err
	}
	return data, nil
}

// position returns the 1-based line and column of byte offset off.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

// checkDuplicateKeys walks a JSON document and reports the first object
// key that appears twice, with its pointer, and any syntax error.
func checkDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var walk func(path []string) error
	walk = func(path []string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				if seen[k] {
					return fmt.Errorf("%s: duplicate key %q", pointer(append(path, k)...), k)
				}
				seen[k] = true
				if err := walk(append(path, k)); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walk(append(path, fmt.Sprint(i))); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		if err != nil {
			return err
		}
		return nil
	}
	if err := walk(nil); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("json: unexpected end of the document")
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return err
		}
		if strings.HasPrefix(err.Error(), "/") {
			return err // a duplicate key, with its pointer
		}
		return fmt.Errorf("json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("json: data after the top-level value")
	}
	return nil
}

// validateSchema checks doc against abi/policy.schema.json.
func validateSchema(doc []byte, name string) error {
	raw, err := abi.Schema("policy.schema.json")
	if err != nil {
		return fmt.Errorf("policy schema: %w", err)
	}
	sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("policy schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, sdoc); err != nil {
		return fmt.Errorf("policy schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return fmt.Errorf("policy schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return &Error{File: name, Err: fmt.Errorf("json: %w", err)}
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	printer := message.NewPrinter(language.English)
	var leaves []leaf
	collectLeaves(ve, nil, &leaves)
	sort.SliceStable(leaves, func(i, j int) bool {
		return pointer(leaves[i].loc...) < pointer(leaves[j].loc...)
	})
	var errs []error
	seen := map[string]bool{}
	for _, l := range leaves {
		msg := l.err.ErrorKind.LocalizedString(printer)
		if ap, ok := l.err.ErrorKind.(*kind.AdditionalProperties); ok {
			msg += suggestKeys(c, l.err.SchemaURL, ap.Properties)
		}
		e := &Error{File: name, Pointer: pointer(l.loc...), Err: errors.New(msg)}
		if e.Pointer == "" {
			e.Pointer = "/"
		}
		if s := e.Error(); !seen[s] {
			seen[s] = true
			errs = append(errs, e)
		}
		if len(errs) == maxSchemaErrors {
			break
		}
	}
	return errors.Join(errs...)
}

// leaf is one innermost schema error with the pointer it is about.
type leaf struct {
	loc []string
	err *jsonschema.ValidationError
}

// collectLeaves gathers the innermost errors. Errors under propertyNames
// are about a key, validated as a fresh instance: they get the key's
// pointer.
func collectLeaves(e *jsonschema.ValidationError, override []string, out *[]leaf) {
	loc := e.InstanceLocation
	if override != nil {
		loc = override
	}
	if pn, ok := e.ErrorKind.(*kind.PropertyNames); ok {
		override = append(slices.Clone(loc), pn.Property)
	}
	if len(e.Causes) == 0 {
		*out = append(*out, leaf{loc: loc, err: e})
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, override, out)
	}
}

// suggestKeys returns " (did you mean 'x'?)" for unknown keys close to a
// key the schema at schemaURL allows, or "".
func suggestKeys(c *jsonschema.Compiler, schemaURL string, unknown []string) string {
	sch, err := c.Compile(schemaURL)
	if err != nil || len(sch.Properties) == 0 {
		return ""
	}
	known := make([]string, 0, len(sch.Properties))
	for k := range sch.Properties {
		known = append(known, k)
	}
	sort.Strings(known)
	var hints []string
	for _, u := range unknown {
		if k := closest(u, known); k != "" {
			hints = append(hints, "'"+u+"': did you mean '"+k+"'?")
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, "; ") + ")"
}

// closest returns the candidate nearest to s by case-insensitive edit
// distance, if it is near enough to be a plausible typo.
func closest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, len(best)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
