// Package netguard is the host's one network policy mechanism. Every
// runner that lets a tool reach the network (the Extism http_request host
// function, the script bridge's egress proxy, later runners) goes through
// a [Guard] built from the tool's effective grant.
//
// A Guard enforces, for every request and every redirect hop:
//   - the allowlist: scheme, host glob and port, asked of a [HostChecker]
//     (the *policy.Grant);
//   - the address rules: every address a name resolves to is checked, and
//     loopback, private (RFC 1918, fc00::/7), link-local, CGNAT, metadata,
//     multicast, unspecified and IPv4-mapped forms of those are refused
//     unless [Options.AllowPrivate] is set. The Guard then dials the
//     address it checked, never the name, so a DNS answer that changes
//     between check and dial (DNS rebinding) is no bypass;
//   - caps: at most 5 redirects, a response body of at most
//     [Options.MaxResponseBytes] and a total time of [Options.Timeout]
//     per request, body included, so a server dribbling bytes is cut off.
//
// Refusals are *abi.Error values with code PERMISSION_DENIED that name the
// host and the reason; caps give OUTPUT_LIMIT or TIMEOUT. The Guard counts
// refusals ([Guard.Denials]) so a runner can report a failed call as
// PERMISSION_DENIED.
//
// Three entry points serve different callers:
//   - [Guard.Client]: an *http.Client for host functions (Extism);
//   - [Guard.ServeProxy]: an HTTP forward proxy (CONNECT and plain
//     absolute-form requests) for subprocesses (the script bridge);
//   - [Guard.DialContext] and [Guard.CheckURL]: the building blocks.
//     DialContext enforces only the address rules; CheckURL only the
//     allowlist. Client and ServeProxy apply both.
package netguard
