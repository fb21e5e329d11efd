package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/schema"
)

// state is what Validate and Load compute once for a tool.
type state struct {
	params *schema.Schema
	output *schema.Schema
	// file is the resolved absolute path of the module, script or workflow
	// file (Load only); digest its hex sha256 as read at load.
	file   string
	digest string
}

// Limits accepted in a manifest (also in abi/manifest.schema.json).
const (
	maxTimeoutMs      = 86_400_000
	maxMemoryMb       = 4096 // a wasm32 memory is at most 4 GiB
	maxOutputBytesCap = 1 << 30
)

// Default handler values that Validate fills in.
const (
	// DefaultEntryPoint is the export an extism-ABI tool calls when
	// handler.entryPoint is absent.
	DefaultEntryPoint = "call"
)

// Languages of external-script handlers.
const (
	LanguagePython = "python"
	LanguageNodeJS = "nodejs"
	LanguageBun    = "bun"
)

// The patterns of names. Lengths are checked apart (see matches): a
// counted repetition such as {0,127} compiles to that many copies of its
// class, which cost a process about 2 ms and 400 KiB at start-up.
var (
	reSHA256   = regexp.MustCompile(`^[0-9a-f]*$`)
	reEntry    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.$-]*$`)
	reService  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	reEnvName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	reHostGlob = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://)?[^\s/?#@]+$`)
	reTag      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)
)

// matches reports whether s matches re and is between min and max bytes
// long.
func matches(re *regexp.Regexp, s string, min, max int) bool {
	return len(s) >= min && len(s) <= max && re.MatchString(s)
}

// reservedGuestPaths are the standard guest mount points that a
// fileAccess.mounts entry may not shadow.
var reservedGuestPaths = []string{"/workspace", "/tool", "/cache", "/tmp"}

// Validate checks the semantic rules of a manifest that the JSON Schema
// cannot express, fills in defaults (entryPoint "call" for extism,
// outputFormat "json"), and compiles the parameters and output schemas.
// [Parse] calls it; a host that builds a Tool in Go (for example a
// service-method tool) calls it, or lets registry.Add call it, before the
// tool is shared. It checks no files; see [Load].
func (t *Tool) Validate() error {
	return t.validate(true)
}

// validate implements Validate. withSchema also checks t, re-encoded, against
// the manifest JSON Schema, so a Tool built in Go meets the same limits as a
// file (Parse has already checked the file's bytes and passes false).
func (t *Tool) validate(withSchema bool) error {
	if withSchema {
		raw, err := json.Marshal(t)
		if err != nil {
			return newError(t.Path, "", "cannot encode the tool", err)
		}
		doc, err := decodeJSON(raw)
		if err != nil {
			return newError(t.Path, "", "cannot encode the tool", err)
		}
		ms, err := manifestSchema()
		if err != nil {
			return fmt.Errorf("compile the embedded manifest schema: %w", err)
		}
		if aerr := ms.Validate(doc); aerr != nil {
			return schemaError(t.Path, aerr)
		}
	}
	fail := func(ptr, format string, args ...any) error {
		return newError(t.Path, ptr, fmt.Sprintf(format, args...), nil)
	}
	ns, _, err := SplitID(t.ToolID)
	if err != nil {
		return newError(t.Path, "/toolId", "invalid tool id", err)
	}
	switch {
	case ns == NamespaceWorkflow && t.Handler.Type != HandlerWorkflow:
		return fail("/toolId", "namespace %q is reserved for workflow tools (handler type %q)", ns, HandlerWorkflow)
	case ns != NamespaceWorkflow && t.Handler.Type == HandlerWorkflow:
		return fail("/toolId", "a workflow tool's id must be in the %q namespace, as in workflow:%s", NamespaceWorkflow, IDPart(strings.ReplaceAll(t.ToolID, ":", "_")))
	case ns == NamespaceMCP && !t.imported:
		return fail("/toolId", "namespace %q is reserved for tools imported from MCP servers", ns)
	}
	if strings.TrimSpace(t.DisplayName) == "" {
		return fail("/displayName", "displayName is required")
	}
	if strings.TrimSpace(t.Description) == "" {
		return fail("/description", "description is required: say what the tool does and when to use it")
	}
	if err := ValidVersion(t.Version); err != nil {
		return newError(t.Path, "/version", "invalid version", err)
	}
	if err := t.validateHandler(); err != nil {
		return err
	}
	if err := t.validateSecurity(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, tag := range t.Tags {
		if !matches(reTag, tag, 1, 64) {
			return fail(fmt.Sprintf("/tags/%d", i), "tag %q: letters, digits and . _ : / - only, at most 64", tag)
		}
		if seen[tag] {
			return fail(fmt.Sprintf("/tags/%d", i), "duplicate tag %q", tag)
		}
		seen[tag] = true
	}
	st := &state{}
	if t.state != nil {
		st.file, st.digest = t.state.file, t.state.digest
	}
	base := "mem://tools/" + url.PathEscape(t.ToolID) + "@" + url.PathEscape(t.Version)
	if len(t.Parameters) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(t.Parameters, &obj); err != nil {
			return fail("/parameters", "parameters must be a JSON Schema object")
		}
		var typ string
		if err := json.Unmarshal(obj["type"], &typ); err != nil || typ != "object" {
			return fail("/parameters", `parameters must have "type": "object" (arguments are always an object)`)
		}
		if st.params, err = schema.Compile(t.Parameters, base+"/parameters.json"); err != nil {
			return newError(t.Path, "/parameters", "parameters is not a valid JSON Schema", err)
		}
	}
	if len(t.Output) > 0 {
		if st.output, err = schema.Compile(t.Output, base+"/output.json"); err != nil {
			return newError(t.Path, "/output", "output is not a valid JSON Schema", err)
		}
	}
	for i, ex := range t.Examples {
		ptr := fmt.Sprintf("/examples/%d", i)
		if strings.TrimSpace(ex.Description) == "" {
			return fail(ptr+"/description", "an example needs a description")
		}
		in, err := decodeJSON(ex.Input)
		if err != nil {
			return newError(t.Path, ptr+"/input", "input is not valid JSON", err)
		}
		if _, ok := in.(map[string]any); !ok {
			return fail(ptr+"/input", "input must be an object of arguments")
		}
		if st.params != nil {
			if aerr := st.params.Validate(in); aerr != nil {
				return fail(ptr+"/input", "input does not match parameters: %s", aerr.Message)
			}
		}
		if len(ex.ExpectedOutput) > 0 && st.output != nil {
			out, err := decodeJSON(ex.ExpectedOutput)
			if err != nil {
				return newError(t.Path, ptr+"/expectedOutput", "expectedOutput is not valid JSON", err)
			}
			if aerr := st.output.Validate(out); aerr != nil {
				return fail(ptr+"/expectedOutput", "expectedOutput does not match output: %s", aerr.Message)
			}
		}
		if ex.Fixtures != nil {
			if p, reason := checkFixtures(ex.Fixtures); reason != "" {
				return fail(ptr+"/fixtures"+p, "%s", reason)
			}
		}
	}
	t.state = st
	return nil
}

func decodeJSON(raw json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// validateHandler checks the fields of each handler type and rejects the
// fields of the other types, then fills in defaults.
func (t *Tool) validateHandler() error {
	h := &t.Handler
	fail := func(field, format string, args ...any) error {
		return newError(t.Path, "/handler/"+field, fmt.Sprintf(format, args...), nil)
	}
	// fields[name] = set?
	set := map[string]bool{
		"module": h.Module != "", "abi": h.ABI != "", "entryPoint": h.EntryPoint != "",
		"sha256": h.SHA256 != "", "config": h.Config != nil, "outputFormat": h.OutputFormat != "",
		"scriptPath": h.ScriptPath != "", "language": h.Language != "",
		"serviceName": h.ServiceName != "", "methodName": h.MethodName != "", "workflow": h.Workflow != "",
		"server": h.Server != "", "tool": h.Tool != "",
	}
	var allowed []string
	switch h.Type {
	case HandlerWasm:
		allowed = []string{"module", "abi", "entryPoint", "sha256", "config", "outputFormat"}
	case HandlerScript:
		allowed = []string{"scriptPath", "language", "outputFormat"}
	case HandlerServiceMethod:
		allowed = []string{"serviceName", "methodName"}
	case HandlerWorkflow:
		allowed = []string{"workflow"}
	case HandlerMCP:
		if !t.imported {
			return fail("type", "handler type %q is for tools the host imports from MCP servers (the policy's mcpServers)", h.Type)
		}
		return nil
	default:
		return fail("type", "unknown handler type %q; want %q, %q, %q or %q", h.Type,
			HandlerWasm, HandlerScript, HandlerServiceMethod, HandlerWorkflow)
	}
	for _, f := range []string{"module", "abi", "entryPoint", "sha256", "config", "outputFormat",
		"scriptPath", "language", "serviceName", "methodName", "workflow", "server", "tool"} {
		if set[f] && !slices.Contains(allowed, f) {
			return fail(f, "%s does not apply to handler type %q", f, h.Type)
		}
	}
	switch h.Type {
	case HandlerWasm:
		if err := checkRelPath(h.Module); err != nil {
			return newError(t.Path, "/handler/module", "module must be a file inside the manifest's folder", err)
		}
		switch h.ABI {
		case ABIWasiCommand:
			if h.EntryPoint != "" {
				return fail("entryPoint", "entryPoint applies only to abi %q (a wasi-command module runs _start)", ABIExtism)
			}
		case ABIExtism:
			if h.EntryPoint == "" {
				h.EntryPoint = DefaultEntryPoint
			}
			if !matches(reEntry, h.EntryPoint, 1, 128) {
				return fail("entryPoint", "entryPoint %q is not a valid export name", h.EntryPoint)
			}
		default:
			return fail("abi", "abi must be %q or %q, got %q", ABIWasiCommand, ABIExtism, h.ABI)
		}
		if h.SHA256 != "" && !matches(reSHA256, h.SHA256, 64, 64) {
			return fail("sha256", "sha256 must be 64 lower-case hex digits")
		}
		for k := range h.Config {
			if k == "" || len(k) > 256 {
				return fail("config", "config keys must be 1 to 256 bytes long")
			}
		}
	case HandlerScript:
		if err := checkRelPath(h.ScriptPath); err != nil {
			return newError(t.Path, "/handler/scriptPath", "scriptPath must be a file inside the manifest's folder", err)
		}
		switch h.Language {
		case LanguagePython, LanguageNodeJS, LanguageBun:
		default:
			return fail("language", "language must be %q, %q or %q, got %q", LanguagePython, LanguageNodeJS, LanguageBun, h.Language)
		}
	case HandlerServiceMethod:
		if !matches(reService, h.ServiceName, 1, 128) {
			return fail("serviceName", "serviceName %q is not a valid name", h.ServiceName)
		}
		if !matches(reService, h.MethodName, 1, 128) {
			return fail("methodName", "methodName %q is not a valid name", h.MethodName)
		}
	case HandlerWorkflow:
		if err := checkRelPath(h.Workflow); err != nil {
			return newError(t.Path, "/handler/workflow", "workflow must be a file inside the manifest's folder", err)
		}
	}
	if h.Type == HandlerWasm || h.Type == HandlerScript {
		switch h.OutputFormat {
		case "":
			h.OutputFormat = OutputJSON
		case OutputJSON, OutputText:
		default:
			return fail("outputFormat", "outputFormat must be %q or %q, got %q", OutputJSON, OutputText, h.OutputFormat)
		}
	}
	return nil
}

// checkRelPath checks that p names a file below the manifest's folder
// syntactically: relative, no '..' segment, no backslash.
func checkRelPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("path is empty")
	case strings.ContainsAny(p, "\\\x00"):
		return fmt.Errorf("path %q: backslashes and NUL are not allowed; use '/'", p)
	case path.IsAbs(p) || hasDrive(p):
		return fmt.Errorf("path %q is absolute", p)
	case hasDotDot(p):
		return fmt.Errorf("path %q leaves its folder ('..')", p)
	}
	return nil
}

func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}

func hasDotDot(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// validateSecurity checks the syntax of the requested capabilities.
func (t *Tool) validateSecurity() error {
	sc := t.SecurityContext
	if sc == nil {
		return nil
	}
	fail := func(ptr, format string, args ...any) error {
		return newError(t.Path, "/securityContext"+ptr, fmt.Sprintf(format, args...), nil)
	}
	if len(sc.Credentials) > 0 && t.Handler.Type != HandlerScript && t.Handler.Type != HandlerServiceMethod {
		return fail("/credentials", "credentials are handed to script and Go (service-method) tools only: a %s tool's environment is fixed when its module is prepared, so a per-call credential cannot reach it", t.Handler.Type)
	}
	if fa := sc.FileAccess; fa != nil {
		for _, list := range []struct {
			name  string
			paths []string
		}{{"allowRead", fa.AllowRead}, {"allowWrite", fa.AllowWrite}} {
			for i, p := range list.paths {
				if err := CheckAccessPath(p); err != nil {
					return newError(t.Path, fmt.Sprintf("/securityContext/fileAccess/%s/%d", list.name, i), "invalid path", err)
				}
			}
		}
		var guests []string
		for _, g := range slices.Sorted(maps.Keys(fa.Mounts)) {
			host := fa.Mounts[g]
			ptr := "/fileAccess/mounts/" + strings.ReplaceAll(strings.ReplaceAll(g, "~", "~0"), "/", "~1")
			if err := checkMountGuest(g); err != nil {
				return fail(ptr, "%s", err.Error())
			}
			if err := checkMountHost(host); err != nil {
				return fail(ptr, "%s", err.Error())
			}
			for _, o := range guests {
				if within(g, o) || within(o, g) {
					return fail(ptr, "mount %q overlaps mount %q", g, o)
				}
			}
			guests = append(guests, g)
		}
	}
	if na := sc.NetworkAccess; na != nil {
		for i, h := range na.AllowHosts {
			if !reHostGlob.MatchString(h) || len(h) > 300 {
				return fail(fmt.Sprintf("/networkAccess/allowHosts/%d", i),
					"host %q: want a host name or glob (*.example.com), optionally with scheme:// and :port, and no path", h)
			}
		}
	}
	seen := map[string]bool{}
	for i, e := range sc.Env {
		if !matches(reEnvName, e, 1, 128) {
			return fail(fmt.Sprintf("/env/%d", i), "environment variable name %q is not valid", e)
		}
		if seen[e] {
			return fail(fmt.Sprintf("/env/%d", i), "duplicate environment variable %q", e)
		}
		seen[e] = true
	}
	if l := sc.Limits; l != nil {
		switch {
		case l.TimeoutMs < 0 || l.TimeoutMs > maxTimeoutMs:
			return fail("/limits/timeoutMs", "timeoutMs must be between 1 and %d", maxTimeoutMs)
		case l.MemoryMb < 0 || l.MemoryMb > maxMemoryMb:
			return fail("/limits/memoryMb", "memoryMb must be between 1 and %d (a wasm32 memory is at most 4 GiB)", maxMemoryMb)
		case l.Fuel > math.MaxInt64:
			return fail("/limits/fuel", "fuel must be at most %d", int64(math.MaxInt64))
		case l.MaxOutputBytes < 0 || l.MaxOutputBytes > maxOutputBytesCap:
			return fail("/limits/maxOutputBytes", "maxOutputBytes must be between 1 and %d", maxOutputBytesCap)
		}
	}
	return nil
}

// CheckAccessPath checks the syntax of a fileAccess path: a
// workspace-relative glob, or one that starts with $TOOL/, $CACHE/ or
// $TMP/ (or is exactly $TOOL, $CACHE or $TMP); never absolute, never with a
// '..' segment or a backslash; '$' only in that prefix.
func CheckAccessPath(p string) error {
	rest := p
	if strings.HasPrefix(p, "$") {
		root, after, _ := strings.Cut(p, "/")
		switch root {
		case "$TOOL", "$CACHE", "$TMP":
		default:
			return fmt.Errorf("path %q: unknown root %q; use $TOOL/, $CACHE/ or $TMP/, or a workspace-relative path", p, root)
		}
		rest = after
		if rest == "" {
			return nil
		}
	}
	switch {
	case p == "":
		return fmt.Errorf("path is empty")
	case strings.Contains(rest, "$"):
		return fmt.Errorf("path %q: '$' is only allowed in the $TOOL/, $CACHE/ or $TMP/ prefix", p)
	case strings.HasPrefix(rest, "~"):
		return fmt.Errorf("path %q: home-relative paths are not allowed; paths are relative to the workspace", p)
	}
	if err := checkRelPath(rest); err != nil {
		return fmt.Errorf("file access %w", err)
	}
	return nil
}

// checkMountGuest checks a mounts key: an absolute, clean guest path that
// does not shadow the standard mounts.
func checkMountGuest(g string) error {
	if !strings.HasPrefix(g, "/") || len(g) > 256 || path.Clean(g) != g || g == "/" || strings.ContainsAny(g, "\\\x00*?[") {
		return fmt.Errorf("mount point %q must be a clean absolute guest path such as /mnt/data", g)
	}
	for _, r := range reservedGuestPaths {
		if within(g, r) || within(r, g) {
			return fmt.Errorf("mount point %q would shadow %s", g, r)
		}
	}
	return nil
}

// checkMountHost checks a mounts value: a workspace-relative folder (no
// glob, no '$' root, no '..', not absolute).
func checkMountHost(h string) error {
	if strings.ContainsAny(h, "*?[$") {
		return fmt.Errorf("mount source %q must be a plain workspace-relative folder (no globs or $ roots)", h)
	}
	if err := checkRelPath(h); err != nil {
		return fmt.Errorf("mount source: %w", err)
	}
	return nil
}

// within reports whether guest path a equals b or lies below it.
func within(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/")
}

// checkFixtures checks an example's fixtures and returns the JSON
// Pointer (below /fixtures) and reason of the first problem. That the
// files exist is checked when a test uses them: a toolpack may be
// shipped without its test folder.
func checkFixtures(f *Fixtures) (ptr, reason string) {
	if f.Workspace != "" {
		if err := checkRelPath(f.Workspace); err != nil {
			return "/workspace", err.Error()
		}
	}
	seen := map[string]int{}
	for i, h := range f.HTTP {
		p := fmt.Sprintf("/http/%d", i)
		u, err := url.Parse(h.URL)
		switch {
		case err != nil:
			return p + "/url", fmt.Sprintf("url %q: %v", h.URL, err)
		case u.Scheme != "http" && u.Scheme != "https":
			return p + "/url", fmt.Sprintf("url %q: want http:// or https://", h.URL)
		case u.Hostname() == "" || u.User != nil || u.Fragment != "" || u.Opaque != "":
			return p + "/url", fmt.Sprintf("url %q: want scheme://host[:port]/path[?query], without user or fragment", h.URL)
		}
		if h.Body != "" && h.BodyFile != "" {
			return p, "body and bodyFile are exclusive"
		}
		if h.BodyFile != "" {
			if err := checkRelPath(h.BodyFile); err != nil {
				return p + "/bodyFile", err.Error()
			}
		}
		method := h.Method
		if method == "" {
			method = "GET"
		}
		key := method + " " + h.URL
		if j, dup := seen[key]; dup {
			return p, fmt.Sprintf("a second response for %s (the first is /fixtures/http/%d)", key, j)
		}
		seen[key] = i
	}
	return "", ""
}
