package policy

import (
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/host/toolpack"
)

// Built-in defaults, used by [Default] and wherever a limit in a
// Policy is zero.
const (
	DefaultTimeoutMs      = 10_000
	DefaultMemoryMb       = 256
	DefaultMaxOutputBytes = 1 << 20
	MaxTimeoutMs          = 60_000
	MaxMemoryMb           = 1024
	MaxMaxOutputBytes     = 16 << 20
	DefaultPoolMemoryMb   = 64
)

// Policy is the operator's policy file: the ceiling every tool's
// request is intersected with. Build one with [Parse], [Load] or [Default];
// a Policy built by hand should be checked with [Policy.Validate].
//
// The zero value is the most restrictive policy: the current directory as
// workspace, no reads or writes beyond $TOOL, $TMP and $CACHE, no network,
// no environment, the built-in limits and no instance pools.
//
// A Policy is data: Grant only reads it, so any number of goroutines may
// call Grant at once as long as nobody modifies the Policy meanwhile.
type Policy struct {
	// Workspace is the folder relative fileAccess paths are in. Load makes
	// it absolute (relative to the policy file); "" is the current
	// directory.
	Workspace string `json:"workspace,omitempty"`
	// FileAccess is the workspace ceiling. Patterns are workspace-relative
	// globs; $TOOL, $TMP and $CACHE are not governed by it.
	FileAccess FileAccess `json:"fileAccess"`
	// NetworkAccess is the network ceiling.
	NetworkAccess NetworkAccess `json:"networkAccess"`
	// Env lists the host environment variables a tool may receive if it
	// requests them.
	Env []string `json:"env,omitzero"`
	// Limits holds the default and maximum resource limits.
	Limits LimitRange `json:"limits"`
	// Isolation governs the subprocess bridge.
	Isolation Isolation `json:"isolation"`
	// Tools holds per-tool overrides, keyed by tool ID (all versions).
	Tools map[string]ToolPolicy `json:"tools,omitempty"`
	// Pool bounds the pre-initialised instance pools.
	Pool Pool `json:"pool"`
	// CacheDir is the persistent cache folder (compiled modules, each
	// tool's $CACHE under tools/). "" is the user cache folder +
	// "/agenthost".
	CacheDir string `json:"cacheDir,omitempty"`
	// RequireSignature loads only toolpack folders signed by a trusted key
	// whose files are exactly the signed ones; the tools of any other
	// folder are LOAD_ERRORs naming the reason. It needs TrustedKeys.
	RequireSignature bool `json:"requireSignature,omitempty"`
	// TrustedKeys are the keys toolpacks may be signed with: each entry a
	// public-key line ("keytype key [comment]", trusted for toolpacks
	// only), a line of ssh-keygen's ALLOWED SIGNERS ("principals
	// [options] keytype key"; the options namespaces, valid-after and
	// valid-before are enforced, any other is an error), or, without a
	// space, the path of a .pub or allowed-signers file (relative to the
	// policy file).
	TrustedKeys []string `json:"trustedKeys,omitempty"`
	signers     []toolpack.Signer
	// MCPServers are MCP servers whose tools the host imports as
	// mcp:<server>.<tool> (see MCPServer).
	MCPServers map[string]MCPServer `json:"mcpServers,omitempty"`
	// Approve are the rules whose calls wait for a person's decision
	// before they run (see ApproveRule).
	Approve []ApproveRule `json:"approve,omitempty"`

	// source names the file the policy came from, for error messages.
	source string
}

// FileAccess is a file ceiling: globs relative to the workspace.
type FileAccess struct {
	AllowRead  []string `json:"allowRead,omitzero"`
	AllowWrite []string `json:"allowWrite,omitzero"`
}

// NetworkAccess is a network ceiling.
type NetworkAccess struct {
	// AllowHosts are host globs with optional scheme:// and :port; see
	// [ParseHostRule].
	AllowHosts []string `json:"allowHosts,omitzero"`
	// AllowPrivateAddresses lets granted hosts resolve to loopback,
	// private (RFC 1918, ULA), link-local and metadata addresses.
	AllowPrivateAddresses bool `json:"allowPrivateAddresses,omitempty"`
}

// LimitRange holds the default and maximum limits.
type LimitRange struct {
	Default DefaultLimits `json:"default"`
	Max     MaxLimits     `json:"max"`
}

// DefaultLimits apply where a tool requests nothing. A zero field means
// the built-in default (Fuel: not metered).
type DefaultLimits struct {
	TimeoutMs      int64  `json:"timeoutMs,omitempty"`
	MemoryMb       int64  `json:"memoryMb,omitempty"`
	MaxOutputBytes int64  `json:"maxOutputBytes,omitempty"`
	Fuel           uint64 `json:"fuel,omitempty"`
	// Deterministic gives every tool a fixed clock and seeded randomness.
	// A tool may also ask for it itself; it cannot opt out.
	Deterministic bool `json:"deterministic,omitempty"`
}

// MaxLimits are ceilings on what a tool may request. A zero field means
// the built-in maximum, except Fuel, where 0 is no ceiling.
type MaxLimits struct {
	TimeoutMs      int64  `json:"timeoutMs,omitempty"`
	MemoryMb       int64  `json:"memoryMb,omitempty"`
	MaxOutputBytes int64  `json:"maxOutputBytes,omitempty"`
	Fuel           uint64 `json:"fuel,omitempty"`
}

// Isolation governs the subprocess bridge.
type Isolation struct {
	// AllowDegraded lets scripts run when kernel isolation is unavailable.
	AllowDegraded bool `json:"allowDegraded,omitempty"`
}

// Pool bounds the pre-initialised instance pools.
type Pool struct {
	// MemoryMb is the memory budget of all pools together; 0 disables
	// pooling. Default 64.
	MemoryMb int64 `json:"memoryMb"`
}

// ToolPolicy overrides the policy for one tool. A key that is present
// replaces the policy-wide value of that key for this tool; an absent key
// (nil slice or pointer) inherits it. An empty but non-nil list, as
// decoded from "[]", replaces it with nothing.
type ToolPolicy struct {
	// Deny refuses the tool outright: it loads, but every call is
	// PERMISSION_DENIED.
	Deny          bool               `json:"deny,omitempty"`
	FileAccess    *FileAccess        `json:"fileAccess,omitempty"`
	NetworkAccess *ToolNetworkAccess `json:"networkAccess,omitempty"`
	Env           []string           `json:"env,omitzero"`
	// Limits may lower the policy's maximum (never raise it) and change
	// the defaults for this tool.
	Limits *LimitRange `json:"limits,omitempty"`
	// Config is overlaid on the manifest's handler.config.
	Config map[string]string `json:"config,omitempty"`
}

// ToolNetworkAccess is NetworkAccess for one tool, where an absent
// allowPrivateAddresses inherits the policy-wide value.
type ToolNetworkAccess struct {
	AllowHosts            []string `json:"allowHosts,omitzero"`
	AllowPrivateAddresses *bool    `json:"allowPrivateAddresses,omitempty"`
}

// Default returns the built-in policy: the current directory as
// read-only workspace ("**"), no writes except $TMP, no network, no
// environment, timeout 10 s, memory 256 MiB, output 1 MiB, fuel not
// metered unless requested; maxima 60 s, 1024 MiB, 16 MiB and no fuel
// ceiling; a 64 MiB pool budget; the user cache folder.
func Default() *Policy {
	p := builtin()
	p.resolve("")
	return p
}

// builtin is Default without the file-system lookups.
func builtin() *Policy {
	return &Policy{
		FileAccess: FileAccess{AllowRead: []string{"**"}, AllowWrite: []string{}},
		Limits: LimitRange{
			Default: DefaultLimits{TimeoutMs: DefaultTimeoutMs, MemoryMb: DefaultMemoryMb, MaxOutputBytes: DefaultMaxOutputBytes},
			Max:     MaxLimits{TimeoutMs: MaxTimeoutMs, MemoryMb: MaxMemoryMb, MaxOutputBytes: MaxMaxOutputBytes},
		},
		Pool: Pool{MemoryMb: DefaultPoolMemoryMb},
	}
}

// resolve makes Workspace and CacheDir absolute: relative ones against
// base ("" = the current directory), an empty Workspace as the current
// directory, an empty CacheDir as the user cache folder + "/agenthost"
// (left empty when there is none).
func (p *Policy) resolve(base string) {
	abs := func(s string) string {
		if !filepath.IsAbs(s) && base != "" {
			s = filepath.Join(base, s)
		}
		if a, err := filepath.Abs(s); err == nil {
			return a
		}
		return filepath.Clean(s)
	}
	if p.Workspace == "" {
		p.Workspace = "."
	}
	p.Workspace = abs(p.Workspace)
	for name, m := range p.MCPServers {
		if m.Command != "" && m.Cwd != "" {
			// No default: a server without cwd runs in an empty private
			// folder, never in the policy's (which holds secrets).
			m.Cwd = abs(m.Cwd)
			p.MCPServers[name] = m
		}
	}
	if p.CacheDir != "" {
		p.CacheDir = abs(p.CacheDir)
	} else if dir, err := os.UserCacheDir(); err == nil {
		p.CacheDir = filepath.Join(dir, "agenthost")
	}
}

// Source returns the file the policy was read from ("" for a built-in or
// hand-made policy).
func (p *Policy) Source() string { return p.source }

// Signers returns the parsed TrustedKeys (after Validate).
func (p *Policy) Signers() []toolpack.Signer { return p.signers }

// PoolMemoryBytes returns the pool budget in bytes (0: no pools).
func (p *Policy) PoolMemoryBytes() uint64 {
	if p.Pool.MemoryMb <= 0 {
		return 0
	}
	return uint64(p.Pool.MemoryMb) << 20
}

// effective returns l with zero fields replaced by the built-in defaults.
func (l DefaultLimits) effective() DefaultLimits {
	if l.TimeoutMs <= 0 {
		l.TimeoutMs = DefaultTimeoutMs
	}
	if l.MemoryMb <= 0 {
		l.MemoryMb = DefaultMemoryMb
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return l
}

// effective returns m with zero fields replaced by the built-in maxima
// (Fuel stays 0: no ceiling).
func (m MaxLimits) effective() MaxLimits {
	if m.TimeoutMs <= 0 {
		m.TimeoutMs = MaxTimeoutMs
	}
	if m.MemoryMb <= 0 {
		m.MemoryMb = MaxMemoryMb
	}
	if m.MaxOutputBytes <= 0 {
		m.MaxOutputBytes = MaxMaxOutputBytes
	}
	return m
}
