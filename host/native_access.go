package host

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/host/internal/netguard"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner/native"
)

// FS returns the workspace of the native tool call ctx belongs to, as its
// effective grant allows it to be read: names are workspace-relative
// (fs.ValidPath), each open is checked against the grant's read rules
// (hidden names need a rule that names them), a folder lists only the
// entries the grant lets the tool read or enter, and nothing leaves the
// workspace (symbolic links are resolved and checked, os.Root bounds the
// rest). A refused open is fs.ErrPermission, recorded for the call, and a
// call that then fails is PERMISSION_DENIED. Outside a native tool call,
// every open is refused.
func FS(ctx context.Context) fs.FS { return grantFS{call: native.GrantFrom(ctx)} }

// WriteFile writes data to the workspace-relative name, creating or
// truncating it, if the native tool call's grant allows writing there.
// The folder must exist. A refusal is fs.ErrPermission.
func WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	c := native.GrantFrom(ctx)
	if c == nil || c.Grant.Workspace == "" || !fs.ValidPath(name) || name == "." || !c.Grant.Allows(policy.RootWorkspace, name, true) {
		deny(c, "write", name)
		return &fs.PathError{Op: "write", Path: name, Err: fs.ErrPermission}
	}
	if !linkInside(c.Grant, name, true) {
		deny(c, "write", name)
		return &fs.PathError{Op: "write", Path: name, Err: fs.ErrPermission}
	}
	root, err := os.OpenRoot(c.Grant.Workspace)
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	return errors.Join(werr, f.Close())
}

// HTTPClient returns an HTTP client for the native tool call ctx belongs
// to, under the same network rules as a WASM guest: only the grant's
// hosts, each resolved address checked (loopback, private, link-local and
// metadata addresses refused unless the policy allows them), every
// redirect re-checked, responses capped. A refused request is recorded for
// the call. Outside a native tool call it reaches nothing.
func HTTPClient(ctx context.Context) *http.Client {
	c := native.GrantFrom(ctx)
	g := &policy.Grant{}
	if c != nil {
		g = c.Grant
	}
	guard := netguard.ForGrant(g, netguard.Options{})
	client := guard.Client()
	client.Transport = &recordingTransport{base: client.Transport, guard: guard, call: c}
	return client
}

type recordingTransport struct {
	base  http.RoundTripper
	guard *netguard.Guard
	call  *native.Call
}

func (t *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	before := t.guard.Denials()
	resp, err := t.base.RoundTrip(r)
	if t.call != nil && t.guard.Denials() > before {
		t.call.Refuse("denied: " + t.guard.LastDenial().Message)
	}
	return resp, err
}

// Env returns the host environment variables the native tool call's grant
// holds (requested by the tool and allowed by the policy), and the call's
// short-lived credentials (AGENTHOST_CREDENTIAL_<NAME>); empty outside
// one.
func Env(ctx context.Context) map[string]string {
	out := map[string]string{}
	if c := native.GrantFrom(ctx); c != nil {
		for k, v := range c.Grant.Env {
			out[k] = v
		}
		for k, v := range c.Env {
			out[k] = v
		}
	}
	return out
}

func deny(c *native.Call, op, name string) {
	if c != nil {
		c.Refuse("denied: " + op + " /workspace/" + name)
	}
}

// linkInside resolves the symbolic links of name inside the workspace and
// checks that the real path stays there and is allowed (write or read).
func linkInside(g *policy.Grant, name string, write bool) bool {
	ws, err := filepath.EvalSymlinks(g.Workspace)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(filepath.Join(ws, filepath.FromSlash(name)))
	if errors.Is(err, fs.ErrNotExist) {
		return true // a new file: its name was checked, os.Root bounds it
	}
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(ws, real)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return false
	}
	rel = filepath.ToSlash(rel)
	return g.Allows(policy.RootWorkspace, rel, write) || (!write && g.CanList(policy.RootWorkspace, rel))
}

// grantFS is FS's fs.FS.
type grantFS struct{ call *native.Call }

func (g grantFS) visible(name string) bool {
	gr := g.call.Grant
	return gr.Allows(policy.RootWorkspace, name, false) || gr.CanList(policy.RootWorkspace, name)
}

// Open implements fs.FS.
func (g grantFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if g.call == nil || g.call.Grant.Workspace == "" || !g.visible(name) || !linkInside(g.call.Grant, name, false) {
		deny(g.call, "open", name)
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	root, err := os.OpenRoot(g.call.Grant.Workspace)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		return &grantDir{File: f, fs: g, name: name}, nil
	}
	if !g.call.Grant.Allows(policy.RootWorkspace, name, false) {
		f.Close() // a folder the tool may enter is not a file it may read
		deny(g.call, "open", name)
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, nil
}

// grantDir lists only the entries the grant lets the tool see.
type grantDir struct {
	*os.File
	fs   grantFS
	name string
}

// ReadDir implements fs.ReadDirFile.
func (d *grantDir) ReadDir(n int) ([]fs.DirEntry, error) {
	ents, err := d.File.ReadDir(n)
	out := ents[:0]
	for _, e := range ents {
		p := e.Name()
		if d.name != "." {
			p = d.name + "/" + p
		}
		if d.fs.visible(p) {
			out = append(out, e)
		}
	}
	return out, err
}
