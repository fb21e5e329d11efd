package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/host/schema"
)

// Load reads the manifest at path, parses it (see [Parse]) and checks its
// files: the wasm module, script or workflow file must exist, be a regular
// file, and stay inside the manifest's folder (no '..', no absolute path,
// no symlink resolving outside; both sides are resolved with
// filepath.EvalSymlinks). The file is hashed; for a wasm module with
// handler.sha256 the digests must match. Every error is an *Error
// (errors.Is(err, abi.ErrLoadError) holds).
func Load(path string) (*Tool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, newError(path, "", "cannot read", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, newError(path, "", "not a regular file", nil)
	}
	if fi.Size() > MaxManifestBytes {
		return nil, newError(path, "", fmt.Sprintf("manifest is %d bytes; the limit is %d", fi.Size(), MaxManifestBytes), nil)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, newError(path, "", "cannot read", err)
	}
	early := hashEarly(data, filepath.Dir(path))
	t, err := Parse(data, path)
	if err != nil {
		early.stop()
		return nil, err
	}
	if err := t.loadFile(early); err != nil {
		return nil, err
	}
	return t, nil
}

// LoadGenerated is Load for a manifest the host generated from another
// file (a workflow file): doc is parsed as if read from path, then its
// handler's file is checked and hashed like a loaded manifest's.
func LoadGenerated(doc []byte, path string) (*Tool, error) {
	t, err := Parse(doc, path)
	if err != nil {
		return nil, err
	}
	if err := t.loadFile(nil); err != nil {
		return nil, err
	}
	return t, nil
}

// handlerFile is the manifest field that names h's file and its value;
// "" for a handler without a file.
func handlerFile(h Handler) (field, rel string) {
	switch h.Type {
	case HandlerWasm:
		return "module", h.Module
	case HandlerScript:
		return "scriptPath", h.ScriptPath
	case HandlerWorkflow:
		return "workflow", h.Workflow
	}
	return "", ""
}

// earlyDigest is the digest of a manifest's handler file, computed while
// the manifest is parsed (hashEarly).
type earlyDigest struct {
	file     string // the resolved file hashed
	quit     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	digest   string
	err      error
}

// stop ends the hashing if it still runs, its result being unwanted:
// the manifest failed to parse, or it names another file.
// Safe on nil and more than once.
func (e *earlyDigest) stop() {
	if e != nil {
		e.stopOnce.Do(func() { close(e.quit) })
	}
}

// hashEarly starts hashing the handler file named by the manifest data
// (whose folder is dir) when a quick look at data tells which file.
// Parsing a manifest (checking it, compiling its schemas) takes
// milliseconds; hashing a module of a few MiB takes as long; neither
// needs the other. It returns nil when it cannot tell, and loadFile
// hashes after the parse. loadFile always resolves the file again
// from the parsed manifest, and uses this digest only for that file.
func hashEarly(data []byte, dir string) *earlyDigest {
	var m struct {
		Handler Handler `json:"handler"`
	}
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	field, rel := handlerFile(m.Handler)
	if field == "" {
		return nil
	}
	file, err := ResolveInside(dir, rel)
	if err != nil {
		return nil
	}
	e := &earlyDigest{file: file, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.digest, e.err = hashFileUntil(file, e.quit)
	}()
	return e
}

// loadFile resolves, checks and hashes the handler's file. It takes
// the digest from early (nil if none) if hashEarly resolved that file.
func (t *Tool) loadFile(early *earlyDigest) error {
	defer early.stop()
	field, rel := handlerFile(t.Handler)
	if field == "" {
		return nil
	}
	ptr := "/handler/" + field
	file, err := ResolveInside(t.Dir, rel)
	if err != nil {
		return newError(t.Path, ptr, field+" "+rel, err)
	}
	var digest string
	if early != nil && early.file == file {
		<-early.done
		digest, err = early.digest, early.err
	} else {
		digest, err = hashFile(file)
	}
	if err != nil {
		return newError(t.Path, ptr, field+" "+rel, err)
	}
	if t.Handler.Type == HandlerWasm {
		if err := checkWasmFormat(file); err != nil {
			return newError(t.Path, ptr, "module "+rel, err)
		}
	}
	if t.Handler.Type == HandlerWasm && t.Handler.SHA256 != "" && t.Handler.SHA256 != digest {
		return newError(t.Path, "/handler/sha256", fmt.Sprintf(
			"module %s changed since its manifest was written (its sha256 is %s, the manifest pins %s), so it is not loaded: it may have been tampered with; a toolpack author who rebuilt it on purpose re-pins it with agenthost validate --write-digests",
			rel, digest, t.Handler.SHA256), nil)
	}
	t.state.file, t.state.digest = file, digest
	return nil
}

// ResolveInside resolves rel against dir and returns the real absolute path
// of the regular file it names, or an error when rel is absolute, has a
// '..' segment, does not exist, is not a regular file, or resolves
// (through symlinks) outside dir.
func ResolveInside(dir, rel string) (string, error) {
	real, fi, err := resolveInside(dir, rel)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("is not a regular file")
	}
	return real, nil
}

// ResolveFolderInside is [ResolveInside] for a folder (an example's
// workspace fixture).
func ResolveFolderInside(dir, rel string) (string, error) {
	real, fi, err := resolveInside(dir, rel)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("is not a folder")
	}
	return real, nil
}

func resolveInside(dir, rel string) (string, os.FileInfo, error) {
	if err := checkRelPath(rel); err != nil {
		return "", nil, err
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", nil, fmt.Errorf("resolve folder: %w", err)
	}
	if realDir, err = filepath.Abs(realDir); err != nil {
		return "", nil, fmt.Errorf("resolve folder: %w", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil, fmt.Errorf("does not exist: %w", err)
		}
		return "", nil, fmt.Errorf("resolve: %w", err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", nil, fmt.Errorf("resolve: %w", err)
	}
	r, err := filepath.Rel(realDir, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", nil, fmt.Errorf("resolves to %s, outside the manifest's folder %s", real, realDir)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", nil, fmt.Errorf("stat: %w", err)
	}
	return real, fi, nil
}

// hashFile returns the hex sha256 of a file's content. A process loads
// the same modules again and again (every reload, every host of a
// multi-tenant server), each several MiB: the digest of a file whose
// identity and times have not changed is remembered (fileDigests).
func hashFile(path string) (string, error) { return hashFileUntil(path, nil) }

// errStopped ends a hash whose result is no longer wanted.
var errStopped = errors.New("stopped")

// stoppable is a reader that fails with errStopped once quit is closed.
type stoppable struct {
	r    io.Reader
	quit <-chan struct{}
}

func (s stoppable) Read(p []byte) (int, error) {
	select {
	case <-s.quit:
		return 0, errStopped
	default:
		return s.r.Read(p)
	}
}

// hashFileUntil is hashFile, given up with errStopped once quit gets
// closed (a nil quit never does).
func hashFileUntil(path string, quit <-chan struct{}) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	id, known := fileIdentity(f)
	if known {
		if d, ok := fileDigests.Load(id); ok {
			return d.(string), nil
		}
	}
	h := sha256.New()
	var r io.Reader = f
	if quit != nil {
		r = stoppable{f, quit}
	}
	if _, err := io.Copy(h, r); err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	digest := hex.EncodeToString(h.Sum(nil))
	if after, ok := fileIdentity(f); known && ok && after == id {
		fileDigests.Store(id, digest)
	}
	return digest, nil
}

// fileDigests maps a fileID to the file's hex sha256.
var fileDigests sync.Map

// ModulePath returns the absolute path of the wasm module: the resolved
// real path after [Load], else Dir joined with handler.module; "" for
// other handler types.
func (t *Tool) ModulePath() string {
	if t.Handler.Type != HandlerWasm {
		return ""
	}
	return t.file(t.Handler.Module)
}

// ScriptFile returns the absolute path of the script of an
// external-script tool (resolved after [Load]); "" for other handler
// types.
func (t *Tool) ScriptFile() string {
	if t.Handler.Type != HandlerScript {
		return ""
	}
	return t.file(t.Handler.ScriptPath)
}

// WorkflowFile returns the absolute path of a workflow tool's workflow
// file (resolved after [Load]); "" for other handler types.
func (t *Tool) WorkflowFile() string {
	if t.Handler.Type != HandlerWorkflow {
		return ""
	}
	return t.file(t.Handler.Workflow)
}

func (t *Tool) file(rel string) string {
	if t.state != nil && t.state.file != "" {
		return t.state.file
	}
	if rel == "" {
		return ""
	}
	return filepath.Join(t.Dir, filepath.FromSlash(rel))
}

// Digest returns the hex sha256 of the module, script or workflow file as
// [Load] read it; "" when the tool was not loaded from a file or has none
// (service-method).
func (t *Tool) Digest() string {
	if t.state == nil {
		return ""
	}
	return t.state.digest
}

// ReadModule reads the file of a loaded tool (module, script or workflow)
// and checks that it still has the digest seen at load, so a runner never
// executes bytes other than the ones that were verified. A changed file is
// a LOAD_ERROR.
func (t *Tool) ReadModule() ([]byte, error) {
	if t.state == nil || t.state.file == "" {
		return nil, newError(t.Path, "", "the tool was not loaded from a file (use manifest.Load)", nil)
	}
	b, err := os.ReadFile(t.state.file)
	if err != nil {
		return nil, newError(t.Path, "", "read "+t.state.file, err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != t.state.digest {
		return nil, newError(t.Path, "", fmt.Sprintf("%s changed since load (sha256 %s, loaded %s)", t.state.file, got, t.state.digest), nil)
	}
	return b, nil
}

// ParametersSchema returns the compiled parameters schema, or nil when the
// manifest has none (or the tool was not validated).
func (t *Tool) ParametersSchema() *schema.Schema {
	if t.state == nil {
		return nil
	}
	return t.state.params
}

// OutputSchema returns the compiled output schema, or nil when the
// manifest has none (or the tool was not validated).
func (t *Tool) OutputSchema() *schema.Schema {
	if t.state == nil {
		return nil
	}
	return t.state.output
}

// Validated reports whether [Tool.Validate] (directly, or through Parse or
// Load) has succeeded on t. A copy of a Tool (c := *t) shares what was
// computed; after changing a copy's Parameters, Output or Examples, call
// Validate on the copy before using it.
func (t *Tool) Validated() bool { return t.state != nil }
