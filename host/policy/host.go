package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Schemes a HostRule may name.
const (
	SchemeHTTP  = "http"
	SchemeHTTPS = "https"
)

// ParseHostRule parses a host glob with an optional "scheme://" prefix and
// ":port" suffix: "api.example.com", "*.example.com", "*",
// "https://api.example.com:8443", "10.0.0.7", "[::1]:8080".
//
// The host is lower-cased and a trailing dot dropped. "*.suffix" matches
// one or more labels in front of suffix; "*" alone matches any DNS name
// (never an IP literal). IP literals are kept in their canonical form and
// match only themselves. The scheme is "http" or "https"; a port equal to
// the scheme's default is stored as 0.
func ParseHostRule(s string) (HostRule, error) {
	var r HostRule
	rest := s
	if i := strings.Index(rest, "://"); i >= 0 {
		r.Scheme = strings.ToLower(rest[:i])
		rest = rest[i+3:]
		if r.Scheme != SchemeHTTP && r.Scheme != SchemeHTTPS {
			return HostRule{}, fmt.Errorf("host %q: scheme %q is not http or https", s, r.Scheme)
		}
	}
	if strings.ContainsAny(rest, "/?#@ \t\r\n\x00") {
		return HostRule{}, fmt.Errorf("host %q: only [scheme://]host[:port] is allowed (no path, query or user)", s)
	}
	host, portStr := rest, ""
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return HostRule{}, fmt.Errorf("host %q: missing \"]\" after an IPv6 address", s)
		}
		host = rest[1:end]
		after := rest[end+1:]
		if after != "" {
			if after[0] != ':' {
				return HostRule{}, fmt.Errorf("host %q: unexpected %q after \"]\"", s, after)
			}
			portStr = after[1:]
			if portStr == "" {
				return HostRule{}, fmt.Errorf("host %q: empty port", s)
			}
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return HostRule{}, fmt.Errorf("host %q: %q is not an IPv6 address", s, host)
		}
		host = a.String()
	} else {
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			host, portStr = rest[:i], rest[i+1:]
			if portStr == "" {
				return HostRule{}, fmt.Errorf("host %q: empty port", s)
			}
		}
		h, err := normalizeHostGlob(host)
		if err != nil {
			return HostRule{}, fmt.Errorf("host %q: %w", s, err)
		}
		host = h
	}
	r.Host = host
	if portStr != "" {
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 || portStr[0] == '+' {
			return HostRule{}, fmt.Errorf("host %q: port %q is not a number from 1 to 65535", s, portStr)
		}
		r.Port = p
		if r.Scheme != "" && p == defaultPort(r.Scheme) {
			r.Port = 0
		}
	}
	return r, nil
}

// normalizeHostGlob lower-cases a DNS name or wildcard, drops a trailing
// dot and checks its syntax; an IPv4 literal comes back canonical.
func normalizeHostGlob(h string) (string, error) {
	if h == "" {
		return "", errors.New("empty host")
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "*" {
		return h, nil
	}
	if looksLikeIP(h) {
		a, err := netip.ParseAddr(h)
		switch {
		case err != nil:
			return "", fmt.Errorf("%q is neither an IP address nor a host name", h)
		case !a.Is4():
			return "", errors.New("write an IPv6 address in brackets")
		}
		return a.String(), nil
	}
	name := strings.TrimPrefix(h, "*.")
	if strings.Contains(name, "*") {
		return "", errors.New("\"*\" is allowed only as the whole first label (\"*.example.com\")")
	}
	if !validDNSName(name) {
		return "", fmt.Errorf("%q is not a valid host name (letters, digits, \"-\", \"_\" in dot-separated labels; the last label not numeric)", name)
	}
	return h, nil
}

// validDNSName checks an ASCII host name: labels of 1–63
// letters, digits, "-" or "_", not starting or ending with "-", 253 bytes
// at most, and a last label that is not a number (so "127.1",
// "2130706433" or "0x7f000001", which inet_aton reads as addresses, are no
// names).
func validDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	start := 0
	allDigits := true
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
				allDigits = false
			case c >= '0' && c <= '9':
			default:
				return false
			}
			continue
		}
		label := s[start:i]
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		if i == len(s) && (allDigits || isHexNumber(label)) {
			return false
		}
		start = i + 1
		allDigits = true
	}
	return true
}

// isHexNumber reports whether label is "0x" followed by hex digits, a
// number to inet_aton.
func isHexNumber(label string) bool {
	if len(label) < 2 || label[0] != '0' || label[1] != 'x' && label[1] != 'X' {
		return false
	}
	for i := 2; i < len(label); i++ {
		c := label[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func defaultPort(scheme string) int {
	switch scheme {
	case SchemeHTTP:
		return 80
	case SchemeHTTPS:
		return 443
	}
	return 0
}

// String formats the rule as ParseHostRule reads it.
func (r HostRule) String() string {
	var b strings.Builder
	if r.Scheme != "" {
		b.WriteString(r.Scheme)
		b.WriteString("://")
	}
	if strings.Contains(r.Host, ":") {
		b.WriteByte('[')
		b.WriteString(r.Host)
		b.WriteByte(']')
	} else {
		b.WriteString(r.Host)
	}
	if r.Port != 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(r.Port))
	}
	return b.String()
}

// matchesScheme reports whether the rule admits scheme and port; port is
// the actual port (0 = the scheme's default).
func (r HostRule) matchesScheme(scheme string, port int) bool {
	if scheme != SchemeHTTP && scheme != SchemeHTTPS {
		return false
	}
	if port == 0 {
		port = defaultPort(scheme)
	}
	if r.Scheme != "" && r.Scheme != scheme {
		return false
	}
	switch {
	case r.Port != 0:
		return port == r.Port
	case r.Scheme != "":
		return port == defaultPort(scheme)
	default:
		return true
	}
}

// matchesName reports whether the rule's host admits host, which is a
// lower-case DNS name without trailing dot (isIP false) or a canonical IP
// literal (isIP true).
func (r HostRule) matchesName(host string, ip netip.Addr, isIP bool) bool {
	rh := r.Host
	if isIP {
		if !looksLikeIP(rh) {
			return false
		}
		a, err := netip.ParseAddr(rh)
		return err == nil && a.Unmap() == ip
	}
	switch {
	case rh == "*":
		return true
	case len(rh) > 2 && rh[0] == '*' && rh[1] == '.':
		suffix := rh[1:] // ".example.com"
		return len(host) > len(suffix) && strings.EqualFold(host[len(host)-len(suffix):], suffix)
	default:
		return strings.EqualFold(host, rh)
	}
}

// AllowsHost reports whether the grant lets the guest connect to host on
// port over scheme ("http" or "https"; any other scheme is refused). port
// 0 means the scheme's default port.
//
// host is matched case-insensitively with a trailing dot ignored; an IPv6
// literal may be given with or without brackets. A host that is neither an
// IP literal nor a valid ASCII DNS name (for example "127.1" or a Unicode
// name not converted to punycode) is refused. Whether the resolved address
// may be private is a separate check: see Grant.AllowPrivate.
//
// AllowsHost does not allocate.
func (g *Grant) AllowsHost(scheme, host string, port int) bool {
	if g == nil || g.Denied || len(g.Hosts) == 0 {
		return false
	}
	if port < 0 || port > 65535 {
		return false
	}
	host = strings.TrimSuffix(host, ".")
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	var ip netip.Addr
	isIP := looksLikeIP(host)
	if isIP {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return false
		}
		ip = a
		if ip.Zone() != "" {
			return false
		}
		ip = ip.Unmap()
	} else if !validDNSName(host) {
		return false
	}
	for i := range g.Hosts {
		r := &g.Hosts[i]
		if r.matchesScheme(scheme, port) && r.matchesName(host, ip, isIP) {
			return true
		}
	}
	return false
}

// looksLikeIP reports whether host can only be an IP literal: it has a
// colon, or only digits and dots. (A name whose last label is numeric is
// refused by validDNSName anyway.)
func looksLikeIP(host string) bool {
	if host == "" {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if c == ':' {
			return true
		}
		if c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// covers reports whether every (scheme, host, port) admitted by r is
// admitted by c.
func (c HostRule) covers(r HostRule) bool {
	got, ok := intersectHostRules(r, c)
	return ok && got == r
}

// intersectHostRules returns the rule admitting exactly what both a and b
// admit; ok is false when they share nothing.
func intersectHostRules(a, b HostRule) (HostRule, bool) {
	host, ok := intersectHostNames(a.Host, b.Host)
	if !ok {
		return HostRule{}, false
	}
	if a.Scheme == "" && b.Scheme == "" {
		switch {
		case a.Port == 0:
			return HostRule{Host: host, Port: b.Port}, true
		case b.Port == 0 || a.Port == b.Port:
			return HostRule{Host: host, Port: a.Port}, true
		}
		return HostRule{}, false
	}
	if a.Scheme != "" && b.Scheme != "" && a.Scheme != b.Scheme {
		return HostRule{}, false
	}
	s := a.Scheme
	if s == "" {
		s = b.Scheme
	}
	pa, pb := portSet(a, s), portSet(b, s)
	var p int
	switch {
	case pa == 0:
		p = pb
	case pb == 0 || pa == pb:
		p = pa
	default:
		return HostRule{}, false
	}
	if p == defaultPort(s) {
		p = 0
	}
	return HostRule{Scheme: s, Host: host, Port: p}, true
}

// portSet returns the port r admits under scheme, which r admits: 0 means
// any port (a rule without scheme and port).
func portSet(r HostRule, scheme string) int {
	switch {
	case r.Port != 0:
		return r.Port
	case r.Scheme != "":
		return defaultPort(scheme)
	}
	return 0
}

// intersectHostNames intersects two host globs (normalised as by
// ParseHostRule).
func intersectHostNames(a, b string) (string, bool) {
	if a == b {
		return a, true
	}
	if looksLikeIP(a) || looksLikeIP(b) {
		return "", false // an IP literal matches only itself
	}
	if hostGlobCovers(b, a) {
		return a, true
	}
	if hostGlobCovers(a, b) {
		return b, true
	}
	return "", false
}

// hostGlobCovers reports whether glob g admits every name glob h admits.
func hostGlobCovers(g, h string) bool {
	switch {
	case g == h || g == "*":
		return true
	case h == "*":
		return false
	case strings.HasPrefix(g, "*."):
		suffix := g[1:]
		if strings.HasPrefix(h, "*.") {
			// *.a.example.com ⊆ *.example.com; *.example.com ⊆ *.example.com
			return strings.HasSuffix(h[1:], suffix)
		}
		return len(h) > len(suffix) && strings.HasSuffix(h, suffix)
	}
	return false
}
