package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteDigest recomputes the sha256 of a wasm manifest's module and writes
// it into handler.sha256, changing only that string value in the file
// (every other byte, including formatting and key order, is kept). When
// the handler has no sha256 member yet, one is inserted right after
// "module", copying the file's indentation. It reports whether the file
// changed; a manifest of another handler type is left alone (changed is
// false, err nil). The module must pass the same path checks as in [Load]. The
// Makefile's toolpacks target calls it (through agenthost validate
// --write-digests) after rebuilding the plugins.
func WriteDigest(manifestPath string) (changed bool, err error) {
	fi, err := os.Stat(manifestPath)
	if err != nil {
		return false, newError(manifestPath, "", "cannot read", err)
	}
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		return false, newError(manifestPath, "", "cannot read", err)
	}
	// Parse checks no digest, so a stale one is no obstacle.
	t, err := Parse(data, manifestPath)
	if err != nil {
		return false, err
	}
	if t.Handler.Type != HandlerWasm { // only wasm handlers carry a digest: nothing to write
		return false, nil
	}
	file, err := ResolveInside(t.Dir, t.Handler.Module)
	if err != nil {
		return false, newError(t.Path, "/handler/module", "module "+t.Handler.Module, err)
	}
	digest, err := hashFile(file)
	if err != nil {
		return false, newError(t.Path, "/handler/module", "module "+t.Handler.Module, err)
	}
	if digest == t.Handler.SHA256 {
		return false, nil
	}
	out, err := spliceDigest(data, digest)
	if err != nil {
		return false, newError(t.Path, "/handler/sha256", "cannot rewrite", err)
	}
	if _, err := Parse(out, manifestPath); err != nil {
		return false, fmt.Errorf("rewritten manifest does not parse: %w", err)
	}
	if err := writeFileAtomic(manifestPath, out, fi.Mode().Perm()); err != nil {
		return false, newError(manifestPath, "", "cannot write", err)
	}
	return true, nil
}

// member locates one member of the handler object: byte offsets of the
// start of its key and of its value (start, end).
type member struct {
	keyStart, valStart, valEnd int64
}

// spliceDigest replaces (or inserts) the handler's sha256 string in data.
func spliceDigest(data []byte, digest string) ([]byte, error) {
	members, err := handlerMembers(data)
	if err != nil {
		return nil, err
	}
	quoted := []byte(`"` + digest + `"`)
	if m, ok := members["sha256"]; ok {
		return concat(data[:m.valStart], quoted, data[m.valEnd:]), nil
	}
	m, ok := members["module"]
	if !ok {
		return nil, errors.New("handler has no module")
	}
	// copy the whitespace before "module" and between its key and value
	indent := data[lastNonSpace(data, m.keyStart)+1 : m.keyStart]
	keyEnd := bytes.IndexByte(data[m.keyStart+1:], '"') + int(m.keyStart) + 2
	sep := data[keyEnd:m.valStart]
	ins := concat([]byte(","), indent, []byte(`"sha256"`), sep, quoted)
	return concat(data[:m.valEnd], ins, data[m.valEnd:]), nil
}

func concat(parts ...[]byte) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		b.Write(p)
	}
	return b.Bytes()
}

// lastNonSpace returns the index of the last non-whitespace byte before i.
func lastNonSpace(data []byte, i int64) int {
	j := int(i) - 1
	for j >= 0 && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
		j--
	}
	return j
}

// handlerMembers walks the top-level object and returns the members of
// its "handler" object with their byte offsets.
func handlerMembers(data []byte) (map[string]member, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("manifest is not an object")
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, err
		}
		if k != "handler" {
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
			return nil, errors.New("handler is not an object")
		}
		out := map[string]member{}
		for d.More() {
			before := d.InputOffset()
			key, err := d.Token()
			if err != nil {
				return nil, err
			}
			name, _ := key.(string)
			keyStart := before + int64(bytes.IndexByte(data[before:], '"'))
			afterKey := d.InputOffset()
			var raw json.RawMessage
			if err := d.Decode(&raw); err != nil {
				return nil, err
			}
			end := d.InputOffset()
			// the value starts at the first non-space byte after the colon
			colon := afterKey + int64(bytes.IndexByte(data[afterKey:], ':'))
			start := colon + 1
			for start < end && (data[start] == ' ' || data[start] == '\t' || data[start] == '\n' || data[start] == '\r') {
				start++
			}
			out[name] = member{keyStart: keyStart, valStart: start, valEnd: end}
		}
		return out, nil
	}
	return nil, errors.New("manifest has no handler")
}

// writeFileAtomic writes data to a temporary file next to path and renames
// it over path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tool.json.*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := io.Copy(f, bytes.NewReader(data))
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, perm)); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
