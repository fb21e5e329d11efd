package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/schema"
)

// MaxManifestBytes bounds the size of a *.tool.json file.
const MaxManifestBytes = 1 << 20

// SchemaURL is the mem:// URL the embedded manifest schema is compiled
// under.
const SchemaURL = "mem://agenthost/manifest.schema.json"

// manifestSchema compiles abi/manifest.schema.json once per process. The
// result is immutable; it is the only package-level value and is never
// written after the first call.
var manifestSchema = sync.OnceValues(func() (*schema.Schema, error) {
	raw, err := abi.Schema("manifest.schema.json")
	if err != nil {
		return nil, err
	}
	c := schema.NewCompiler()
	c.Noun = "field"
	return c.Compile(raw, SchemaURL)
})

// Parse parses and validates one manifest. path names the file in errors
// and sets Path (made absolute) and Dir; Parse reads no file. It checks the
// manifest against abi/manifest.schema.json (unknown fields are errors),
// rejects duplicate keys, then applies [Tool.Validate]. Every error is an
// *Error naming the file, the JSON Pointer and the reason.
func Parse(data []byte, path string) (*Tool, error) {
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, newError(path, "", "cannot make the path absolute", err)
		}
		path = abs
	}
	if len(data) > MaxManifestBytes {
		return nil, newError(path, "", fmt.Sprintf("manifest is %d bytes; the limit is %d", len(data), MaxManifestBytes), nil)
	}
	doc, err := decodeStrict(data)
	if err != nil {
		return nil, newError(path, "", "invalid JSON", err)
	}
	if ptr, err := duplicateKey(data); err != nil {
		return nil, newError(path, ptr, "invalid JSON", err)
	}
	ms, err := manifestSchema()
	if err != nil {
		return nil, fmt.Errorf("compile the embedded manifest schema: %w", err)
	}
	if aerr := ms.Validate(doc); aerr != nil {
		return nil, schemaError(path, refine(doc, aerr))
	}
	t := &Tool{}
	if err := json.Unmarshal(data, t); err != nil {
		ptr := ""
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			ptr = "/" + strings.ReplaceAll(te.Field, ".", "/")
		}
		return nil, newError(path, ptr, "cannot decode", err)
	}
	if path != "" {
		t.Path, t.Dir = path, filepath.Dir(path)
	}
	if err := t.validate(false); err != nil {
		return nil, err
	}
	return t, nil
}

// schemaError turns a validation failure of the manifest schema into an
// *Error: the first problem's pointer, and every problem in the reason.
func schemaError(path string, aerr *abi.Error) *Error {
	d, ok := aerr.Details.(schema.Details)
	if !ok || len(d.Errors) == 0 {
		return newError(path, "", aerr.Message, nil)
	}
	first := d.Errors[0]
	reason := first.Message
	for _, fe := range d.Errors[1:] {
		p := fe.Pointer
		if p == "" {
			p = "(root)"
		}
		reason += "; at " + p + ": " + fe.Message
	}
	return newError(path, first.Pointer, reason, nil)
}

// refine replaces the generic schema messages of a few fields with the
// clearer ones of the Go checks (the tool ID and version grammar, the
// relative-path rule, fields of another handler type).
func refine(doc any, aerr *abi.Error) *abi.Error {
	d, ok := aerr.Details.(schema.Details)
	if !ok {
		return aerr
	}
	top, _ := doc.(map[string]any)
	handler, _ := top["handler"].(map[string]any)
	str := func(m map[string]any, k string) (string, bool) {
		v, ok := m[k].(string)
		return v, ok
	}
	out := make([]schema.FieldError, len(d.Errors))
	msgs := make([]string, len(d.Errors))
	for i, fe := range d.Errors {
		switch {
		case fe.Pointer == "/toolId":
			if v, ok := str(top, "toolId"); ok {
				if err := ValidID(v); err != nil {
					fe.Message = err.Error()
				}
			}
		case fe.Pointer == "/version":
			if v, ok := str(top, "version"); ok {
				if err := ValidVersion(v); err != nil {
					fe.Message = err.Error()
				}
			}
		case strings.HasPrefix(fe.Pointer, "/handler/") && handler != nil:
			field := strings.TrimPrefix(fe.Pointer, "/handler/")
			typ, _ := str(handler, "type")
			switch field {
			case "module", "scriptPath", "workflow":
				if v, ok := str(handler, field); ok {
					if err := checkRelPath(v); err != nil {
						fe.Message = field + ": " + err.Error()
						break
					}
				}
				fallthrough
			default:
				if strings.HasSuffix(fe.Message, "is not allowed here") {
					fe.Message = fmt.Sprintf("%s does not apply to handler type %q", field, typ)
				}
			}
		}
		out[i], msgs[i] = fe, fe.Message
	}
	return &abi.Error{Code: aerr.Code, Message: strings.Join(msgs, "; "), Details: schema.Details{Errors: out}}
}

// decodeStrict decodes exactly one JSON value with exact numbers, and
// reports syntax errors with a line and column.
func decodeStrict(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset is just past the offending byte
			line, col := position(data, max(se.Offset-1, 0))
			return nil, fmt.Errorf("line %d, column %d: %w", line, col, err)
		}
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the file is empty")
		}
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		line, col := position(data, d.InputOffset())
		return nil, fmt.Errorf("line %d, column %d: data after the manifest object", line, col)
	}
	return v, nil
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// duplicateKey finds the first object key that appears twice in the same
// object (encoding/json would silently keep the last one, so a reviewer
// and the host could read different manifests). It returns the pointer of
// the duplicate.
func duplicateKey(data []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	type frame struct {
		obj  bool
		keys map[string]bool
		path string // pointer of this container
		next int    // next array index
		key  string // pending key in an object
		want bool   // object expects a key next
	}
	var stack []*frame
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.obj {
			return f.path + "/" + escapePointer(f.key)
		}
		return fmt.Sprintf("%s/%d", f.path, f.next)
	}
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.obj {
			f.want = true
		} else {
			f.next++
		}
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if len(stack) > 0 {
			f := stack[len(stack)-1]
			if f.obj && f.want {
				if delim, ok := tok.(json.Delim); ok && delim == '}' {
					stack = stack[:len(stack)-1]
					afterValue()
					continue
				}
				k, _ := tok.(string)
				if f.keys[k] {
					return f.path + "/" + escapePointer(k), fmt.Errorf("duplicate key %q", k)
				}
				f.keys[k] = true
				f.key, f.want = k, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, path: child(), want: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: child()})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			afterValue()
		default:
			afterValue()
		}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
