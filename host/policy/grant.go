package policy

import "time"

// Root names the folder a path rule is relative to.
type Root string

// The roots of requested paths. In a WASI guest they are mounted at /workspace,
// /tool, /cache and /tmp.
const (
	RootWorkspace Root = "workspace"
	RootTool      Root = "tool"
	RootCache     Root = "cache"
	RootTmp       Root = "tmp"
)

// PathRule grants access to the files under Root whose slash-separated
// path relative to Root matches Pattern ("*" within a segment, "**" across
// segments).
type PathRule struct {
	Root    Root   `json:"root"`
	Pattern string `json:"pattern"`
}

// Mount maps an extra guest path (e.g. "/mnt") to a workspace-relative
// folder. The workspace read/write rules apply through it.
type Mount struct {
	GuestPath string `json:"guestPath"`
	Folder    string `json:"folder"`
}

// HostRule is one allowed network destination: a host glob with an
// optional scheme ("" = http or https) and port (0 = the scheme's default
// ports, i.e. any port for "").
type HostRule struct {
	Scheme string `json:"scheme,omitempty"`
	Host   string `json:"host"`
	Port   int    `json:"port,omitempty"`
}

// Limits are the effective resource limits of a call.
type Limits struct {
	Timeout        time.Duration `json:"timeout"`
	MemoryBytes    uint64        `json:"memoryBytes"`
	Fuel           uint64        `json:"fuel"` // 0 = not metered
	MaxOutputBytes int64         `json:"maxOutputBytes"`
	Deterministic  bool          `json:"deterministic,omitempty"`
}

// Denial records one requested capability the policy did not grant.
type Denial struct {
	Capability string `json:"capability"` // e.g. "fileAccess.allowWrite", "networkAccess", "env", "limits.timeoutMs"
	Requested  string `json:"requested"`
	Reason     string `json:"reason"`
}

// Grant is the effective grant of one tool: its request intersected with
// the operator's policy. The same Grant drives every runner (WASM,
// Extism, script bridge). A Grant is immutable once built.
type Grant struct {
	ToolID string `json:"toolId"`
	// Denied is set when the policy denies the tool outright.
	Denied bool `json:"denied,omitempty"`

	// Host folders backing the roots. Workspace is the policy's
	// workspace, ToolDir the manifest's folder, CacheDir a persistent
	// per-tool folder (created on demand). $TMP is created per call.
	Workspace string `json:"workspace"`
	ToolDir   string `json:"toolDir"`
	CacheDir  string `json:"cacheDir"`

	Read   []PathRule `json:"read"`
	Write  []PathRule `json:"write"`
	Mounts []Mount    `json:"mounts,omitempty"`

	Hosts        []HostRule `json:"hosts"`
	AllowPrivate bool       `json:"allowPrivate,omitempty"`

	// Env holds the granted variables with their values, read from the
	// host environment when the grant was built. Never log it.
	Env map[string]string `json:"-"`
	// EnvNames lists the granted variable names, for audit.
	EnvNames []string `json:"env"`

	Limits Limits `json:"limits"`
	// Config is handler.config overlaid by the policy's per-tool config.
	Config map[string]string `json:"config,omitempty"`
	// AllowDegraded lets the script bridge run without kernel isolation.
	AllowDegraded bool `json:"allowDegraded,omitempty"`

	Denials []Denial `json:"denials,omitempty"`
}
