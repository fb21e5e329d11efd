package manifest

import "encoding/json"

// Handler types.
const (
	HandlerWasm          = "wasm"
	HandlerScript        = "external-script"
	HandlerServiceMethod = "service-method"
	HandlerWorkflow      = "workflow"
	// HandlerMCP runs a tool the host imported from an MCP server; no
	// manifest file may use it (see Imported).
	HandlerMCP = "mcp"
)

// WASM guest ABIs.
const (
	ABIWasiCommand = "wasi-command"
	ABIExtism      = "extism"
)

// Output formats.
const (
	OutputJSON = "json"
	OutputText = "text"
)

// Tool is one parsed and validated *.tool.json manifest.
type Tool struct {
	ToolID          string           `json:"toolId"`
	DisplayName     string           `json:"displayName"`
	Description     string           `json:"description"`
	Version         string           `json:"version"`
	Handler         Handler          `json:"handler"`
	Parameters      json.RawMessage  `json:"parameters,omitempty"`
	Output          json.RawMessage  `json:"output,omitempty"`
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`
	Examples        []Example        `json:"examples,omitempty"`
	Tags            []string         `json:"tags,omitempty"`
	// UI holds display hints for the tool's result ({"kind": "table",
	// "rows": "/items"}): the agent loop hands them on as ui_hints.
	UI map[string]string `json:"ui,omitempty"`
	// Async says calls are long: the HTTP API (agenthost serve) answers
	// them with a job handle at once (202), as for ?async=true. Callers
	// of the library API, the CLI, the agent loop and MCP get the result
	// when the call ends (an MCP client may still run any tool as a task).
	Async bool `json:"async,omitempty"`
	// Idempotent says a call is safe to retry with the same arguments
	// (MCP's idempotentHint).
	Idempotent bool `json:"idempotent,omitempty"`

	// Path is the absolute path of the manifest file; Dir is its folder
	// (the tool's $TOOL folder). Neither is part of the JSON.
	Path string `json:"-"`
	Dir  string `json:"-"`

	// imported marks a tool built by Imported (namespace mcp).
	imported bool

	// state holds what Validate and Load computed (compiled schemas,
	// resolved file, digest); nil until then. See validate.go.
	state *state
}

// Handler says how a tool runs. Which fields apply depends on Type.
type Handler struct {
	Type string `json:"type"`

	// wasm
	Module     string            `json:"module,omitempty"`
	ABI        string            `json:"abi,omitempty"`
	EntryPoint string            `json:"entryPoint,omitempty"`
	SHA256     string            `json:"sha256,omitempty"`
	Config     map[string]string `json:"config,omitempty"`

	// wasm and external-script
	OutputFormat string `json:"outputFormat,omitempty"`

	// external-script
	ScriptPath string `json:"scriptPath,omitempty"`
	Language   string `json:"language,omitempty"`

	// service-method
	ServiceName string `json:"serviceName,omitempty"`
	MethodName  string `json:"methodName,omitempty"`

	// workflow
	Workflow string `json:"workflow,omitempty"`

	// mcp (imported tools only)
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

// SecurityContext is the capabilities a tool requests. It is a request,
// never a grant by itself: see package policy.
type SecurityContext struct {
	FileAccess    *FileAccess    `json:"fileAccess,omitempty"`
	NetworkAccess *NetworkAccess `json:"networkAccess,omitempty"`
	Env           []string       `json:"env,omitempty"`
	Limits        *Limits        `json:"limits,omitempty"`
	// Credentials names short-lived credentials the tool receives per
	// call, each in the environment variable AGENTHOST_CREDENTIAL_<NAME>
	// (script and Go tools; the host must have a credential issuer).
	Credentials []string `json:"credentials,omitempty"`
}

// FileAccess requests file-system access. Paths are globs relative to the
// workspace, or start with $TOOL/, $CACHE/ or $TMP/. Mounts maps an extra
// guest path to a workspace-relative folder.
type FileAccess struct {
	AllowRead  []string          `json:"allowRead,omitempty"`
	AllowWrite []string          `json:"allowWrite,omitempty"`
	Mounts     map[string]string `json:"mounts,omitempty"`
}

// NetworkAccess requests network access to host globs, with an optional
// scheme:// prefix and :port suffix.
type NetworkAccess struct {
	AllowHosts []string `json:"allowHosts,omitempty"`
}

// Limits requests resource limits. Zero means "not requested".
type Limits struct {
	TimeoutMs      int64  `json:"timeoutMs,omitempty"`
	MemoryMb       int64  `json:"memoryMb,omitempty"`
	Fuel           uint64 `json:"fuel,omitempty"`
	MaxOutputBytes int64  `json:"maxOutputBytes,omitempty"`
	// Deterministic asks for a fixed clock and seeded randomness.
	Deterministic bool `json:"deterministic,omitempty"`
}

// Example is an example call. Input must validate against Parameters.
type Example struct {
	Description    string          `json:"description"`
	Input          json.RawMessage `json:"input"`
	ExpectedOutput json.RawMessage `json:"expectedOutput,omitempty"`
	// Fixtures is what the example needs to run as a test (agenthost
	// test): files and canned HTTP responses. Calls outside a test never
	// see it.
	Fixtures *Fixtures `json:"fixtures,omitempty"`
}

// Fixtures are the test set-up of one example.
type Fixtures struct {
	// Workspace is a folder of the toolpack, relative to the manifest's
	// folder: the test copies it into a fresh workspace for the call.
	Workspace string `json:"workspace,omitempty"`
	// HTTP holds canned responses for the URLs the call fetches; the test
	// serves them on loopback and grants the tool only those servers.
	HTTP []HTTPFixture `json:"http,omitempty"`
}

// HTTPFixture is one canned HTTP response.
type HTTPFixture struct {
	// URL is the absolute http(s) URL the example's call requests, the
	// query included.
	URL string `json:"url"`
	// Method is the request's method; "" means GET (which answers HEAD
	// too).
	Method string `json:"method,omitempty"`
	// Status is the response's status; 0 means 200.
	Status int `json:"status,omitempty"`
	// Headers are the response's headers.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the response's body, or BodyFile a file of the toolpack
	// (relative to the manifest's folder) that holds it; at most one.
	Body     string `json:"body,omitempty"`
	BodyFile string `json:"bodyFile,omitempty"`
}
