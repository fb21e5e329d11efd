package policy

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/host/manifest"
)

// MCPServer is one entry of a policy's mcpServers, in the shape of Claude
// Desktop's and VS Code's configuration: Command, Args, Env and Cwd for a
// server the host starts and speaks to over stdio (run under the script
// bridge's isolation with the grant of its SecurityContext: by default
// its folder (Cwd, if any) read-only, $TMP, no network), or URL and
// Headers for a remote server over Streamable HTTP (its host must be
// inside the network ceiling).
type MCPServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Cwd is the server's folder, relative to the policy file; the
	// process starts there and may read it. Without it the process starts
	// in an empty private folder (its $TMP).
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// HeadersFromEnv are headers for a remote server whose values are
	// read from environment variables when the host connects (header →
	// variable), so that a secret never sits in the policy file.
	HeadersFromEnv map[string]string `json:"headersFromEnv,omitempty"`
	// OAuth gets a remote server's bearer token by the OAuth 2.1 client
	// credentials grant, from the authorization server its protected
	// resource metadata names.
	OAuth *MCPOAuth `json:"oauth,omitempty"`
	// SecurityContext is what the server's process requests, under the
	// policy's ceiling like a tool's.
	SecurityContext *manifest.SecurityContext `json:"securityContext,omitempty"`
}

// MCPOAuth is a remote MCP server's OAuth 2.1 client: its client ID, the
// environment variable holding its secret, and the scope to ask for.
type MCPOAuth struct {
	ClientID        string `json:"clientId"`
	ClientSecretEnv string `json:"clientSecretEnv"`
	Scope           string `json:"scope,omitempty"`
}

// Remote reports whether the server is reached over HTTP.
func (m MCPServer) Remote() bool { return m.URL != "" }

func (v *validator) mcpServers(p *Policy) {
	for _, name := range slices.Sorted(maps.Keys(p.MCPServers)) {
		m := p.MCPServers[name]
		ptr := "/mcpServers/" + name
		switch {
		case m.Command == "" && m.URL == "":
			v.add(ptr, "give command (a server the host starts) or url (a remote server)")
			continue
		case m.Command != "" && m.URL != "":
			v.add(ptr, "give command or url, not both")
			continue
		}
		if m.URL != "" {
			if len(m.Args)+len(m.Env) > 0 || m.Cwd != "" {
				v.add(ptr, "args, env and cwd apply to a command, not to a url")
			}
			for h, name := range m.HeadersFromEnv {
				if !validEnvName(name) {
					v.add(ptr+"/headersFromEnv/"+h, "%q is not an environment variable name", name)
				}
			}
			if o := m.OAuth; o != nil && (o.ClientID == "" || !validEnvName(o.ClientSecretEnv)) {
				v.add(ptr+"/oauth", "give clientId and clientSecretEnv (the environment variable holding the client secret)")
			}
			u, err := url.Parse(m.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				v.add(ptr+"/url", "%q is not an http(s) URL", m.URL)
				continue
			}
			port, _ := strconv.Atoi(u.Port())
			if !p.ceilingAllows(u.Scheme, strings.ToLower(u.Hostname()), port) {
				v.add(ptr+"/url", "%s is not inside networkAccess.allowHosts", u.Host)
			}
			continue
		}
		if len(m.Headers)+len(m.HeadersFromEnv) > 0 || m.OAuth != nil {
			v.add(ptr+"/headers", "headers, headersFromEnv and oauth apply to a url, not to a command")
		}
		for k := range m.Env {
			if !validEnvName(k) {
				v.add(ptr+"/env", "%q is not an environment variable name", k)
			}
		}
	}
}

// ceilingAllows reports whether the policy-wide network ceiling admits a
// host.
func (p *Policy) ceilingAllows(scheme, host string, port int) bool {
	g := &Grant{}
	for _, h := range p.NetworkAccess.AllowHosts {
		if r, err := ParseHostRule(h); err == nil {
			g.Hosts = append(g.Hosts, r)
		}
	}
	return g.AllowsHost(scheme, host, port)
}
