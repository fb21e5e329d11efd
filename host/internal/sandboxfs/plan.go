package sandboxfs

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/agenthost/agenthost/host/policy"
)

// Standard guest paths of the WASI file system every WASM tool sees
// (wasi-command and Extism alike).
const (
	GuestWorkspace = "/workspace"
	GuestTool      = "/tool"
	GuestCache     = "/cache"
	GuestTmp       = "/tmp"
)

// Plan returns the mounts of every call of a tool whose folder is toolDir
// under grant: the workspace, the tool folder (read-only), $CACHE, a fresh
// $TMP in memory holding at most the grant's memory limit, and the
// grant's extra mounts; each without Checker and Denials,
// which a [Set] adds.
func Plan(toolDir string, grant *policy.Grant) ([]Config, error) {
	var out []Config
	if grant.Workspace != "" {
		out = append(out, Config{Root: policy.RootWorkspace, Dir: grant.Workspace, GuestPath: GuestWorkspace})
	}
	if grant.ToolDir != "" {
		toolDir = grant.ToolDir
	}
	out = append(out, Config{Root: policy.RootTool, Dir: toolDir, GuestPath: GuestTool, ReadOnly: true})
	if grant.CacheDir != "" {
		out = append(out, Config{Root: policy.RootCache, Dir: grant.CacheDir, GuestPath: GuestCache, Create: true})
	}
	// $TMP is in memory (memTmp), so it may hold what the call may use
	// of memory.
	out = append(out, Config{Root: policy.RootTmp, Temp: true, GuestPath: GuestTmp, TempBytes: int64(min(grant.Limits.MemoryBytes, 1<<40))})

	taken := map[string]bool{"/": true, GuestWorkspace: true, GuestTool: true, GuestCache: true, GuestTmp: true}
	mounts := append([]policy.Mount(nil), grant.Mounts...)
	sort.Slice(mounts, func(i, j int) bool { return mounts[i].GuestPath < mounts[j].GuestPath })
	for _, m := range mounts {
		gp := path.Clean(m.GuestPath)
		if !path.IsAbs(m.GuestPath) || gp != m.GuestPath || taken[gp] {
			return nil, fmt.Errorf("mount guest path %q must be a clean absolute path other than /, %s, %s, %s and %s",
				m.GuestPath, GuestWorkspace, GuestTool, GuestCache, GuestTmp)
		}
		taken[gp] = true
		folder := filepath.ToSlash(filepath.Clean(filepath.FromSlash(m.Folder)))
		if !filepath.IsLocal(filepath.FromSlash(folder)) {
			return nil, fmt.Errorf("mount %s: folder %q leaves the workspace", m.GuestPath, m.Folder)
		}
		if grant.Workspace == "" {
			return nil, fmt.Errorf("mount %s: no workspace", m.GuestPath)
		}
		out = append(out, Config{
			Root:      policy.RootWorkspace,
			Dir:       filepath.Join(grant.Workspace, filepath.FromSlash(folder)),
			Prefix:    folder,
			GuestPath: gp,
		})
	}
	return out, nil
}

// Set is the file systems of one call: an FS per planned mount, a deny-all
// "/" that records every probe elsewhere, and the wazero FSConfig holding
// them. A Set serves one call at a time; Reopen readies it for the next
// (host folders reopened lazily, a new $TMP), and Denials.Reset empties
// its refusal record.
type Set struct {
	Denials  *Denials
	FSs      []*FS
	FSConfig wazero.FSConfig
}

// NewSet builds a Set from a plan, enforcing checker's rules.
func NewSet(checker Checker, plan []Config) (*Set, error) {
	s := &Set{Denials: NewDenials(nil)}
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(NewDeny(s.Denials), "/")
	for _, cfg := range plan {
		cfg.Checker, cfg.Denials = checker, s.Denials
		fs, err := New(cfg)
		if err != nil {
			return nil, fmt.Errorf("mount %s: %w", cfg.GuestPath, err)
		}
		s.FSs = append(s.FSs, fs)
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(fs, cfg.GuestPath)
	}
	s.FSConfig = fsc
	return s, nil
}

// Reopen readies the set for another call.
func (s *Set) Reopen() {
	for _, fs := range s.FSs {
		fs.Reopen()
	}
}

// Close releases the set's folders (and removes its $TMP).
func (s *Set) Close() {
	for _, fs := range s.FSs {
		_ = fs.Close()
	}
}
