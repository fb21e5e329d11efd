package policy_test

import (
	"testing"

	"github.com/agenthost/agenthost/host/policy"
)

func TestParseHostRule(t *testing.T) {
	tests := []struct {
		in      string
		want    policy.HostRule
		str     string
		wantErr bool
	}{
		{in: "api.example.com", want: policy.HostRule{Host: "api.example.com"}},
		{in: "API.Example.COM.", want: policy.HostRule{Host: "api.example.com"}, str: "api.example.com"},
		{in: "*.example.com", want: policy.HostRule{Host: "*.example.com"}},
		{in: "*", want: policy.HostRule{Host: "*"}},
		{in: "https://api.example.com", want: policy.HostRule{Scheme: "https", Host: "api.example.com"}},
		{in: "https://api.example.com:443", want: policy.HostRule{Scheme: "https", Host: "api.example.com"}, str: "https://api.example.com"},
		{in: "http://api.example.com:8080", want: policy.HostRule{Scheme: "http", Host: "api.example.com", Port: 8080}},
		{in: "api.example.com:8443", want: policy.HostRule{Host: "api.example.com", Port: 8443}},
		{in: "10.0.0.7", want: policy.HostRule{Host: "10.0.0.7"}},
		{in: "[::1]:8080", want: policy.HostRule{Host: "::1", Port: 8080}},
		{in: "[2001:DB8::1]", want: policy.HostRule{Host: "2001:db8::1"}, str: "[2001:db8::1]"},
		{in: "my_host.internal", want: policy.HostRule{Host: "my_host.internal"}},
		{in: "", wantErr: true},
		{in: "ftp://example.com", wantErr: true},
		{in: "https://example.com/path", wantErr: true},
		{in: "user@example.com", wantErr: true},
		{in: "example.com:0", wantErr: true},
		{in: "example.com:65536", wantErr: true},
		{in: "example.com:", wantErr: true},
		{in: "example.com:+80", wantErr: true},
		{in: "api.*.com", wantErr: true},
		{in: "a*.example.com", wantErr: true},
		{in: "*example.com", wantErr: true},
		{in: "-bad.example.com", wantErr: true},
		{in: "exa mple.com", wantErr: true},
		{in: "127.1", wantErr: true},
		{in: "2130706433", wantErr: true},
		{in: "0x7f.0.0.1", wantErr: true},
		{in: "0x7f000001", wantErr: true},
		{in: "a.0x", wantErr: true},
		{in: "0xdead.beef", want: policy.HostRule{Host: "0xdead.beef"}},
		{in: "::1", wantErr: true},
		{in: "[fe80::1%eth0]", wantErr: true},
		{in: "[::1", wantErr: true},
		{in: "bücher.example", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := policy.ParseHostRule(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseHostRule(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("ParseHostRule(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			if err != nil {
				return
			}
			str := tc.str
			if str == "" {
				str = tc.in
			}
			if s := got.String(); s != str {
				t.Errorf("String() = %q, want %q", s, str)
			}
		})
	}
}

func hostGrant(t *testing.T, rules ...string) *policy.Grant {
	t.Helper()
	g := &policy.Grant{}
	for _, s := range rules {
		r, err := policy.ParseHostRule(s)
		if err != nil {
			t.Fatal(err)
		}
		g.Hosts = append(g.Hosts, r)
	}
	return g
}

func TestAllowsHost(t *testing.T) {
	type req struct {
		scheme, host string
		port         int
	}
	tests := []struct {
		name    string
		rules   []string
		allowed []req
		denied  []req
	}{
		{
			name:  "exact",
			rules: []string{"api.example.com"},
			allowed: []req{
				{"https", "api.example.com", 443}, {"http", "api.example.com", 80},
				{"https", "API.EXAMPLE.COM", 0}, {"https", "api.example.com.", 443},
				{"http", "api.example.com", 8080},
			},
			denied: []req{
				{"https", "example.com", 443}, {"https", "x.api.example.com", 443},
				{"https", "api.example.com.evil.com", 443}, {"https", "evilapi.example.com", 443},
				{"ftp", "api.example.com", 21}, {"", "api.example.com", 443},
				{"https", "api.example.com..", 443},
			},
		},
		{
			name:    "wildcard",
			rules:   []string{"*.example.com"},
			allowed: []req{{"https", "a.example.com", 443}, {"https", "a.b.example.com", 443}, {"https", "A.Example.Com", 443}},
			denied: []req{
				{"https", "example.com", 443}, {"https", "badexample.com", 443}, {"https", ".example.com", 443},
				{"https", "example.com.evil.net", 443}, {"https", "93.184.216.34", 443},
			},
		},
		{
			name:    "scheme and port",
			rules:   []string{"https://api.example.com", "http://local.test:8080"},
			allowed: []req{{"https", "api.example.com", 443}, {"https", "api.example.com", 0}, {"http", "local.test", 8080}},
			denied:  []req{{"http", "api.example.com", 80}, {"https", "api.example.com", 8443}, {"http", "local.test", 80}, {"https", "local.test", 8080}},
		},
		{
			name:    "port without scheme",
			rules:   []string{"api.example.com:8443"},
			allowed: []req{{"https", "api.example.com", 8443}, {"http", "api.example.com", 8443}},
			denied:  []req{{"https", "api.example.com", 443}},
		},
		{
			name:    "any name",
			rules:   []string{"*"},
			allowed: []req{{"https", "example.com", 443}, {"http", "a.b.c", 80}},
			denied: []req{
				{"https", "127.0.0.1", 443}, {"https", "[::1]", 443}, {"https", "127.1", 443},
				{"https", "2130706433", 443}, {"https", "0x7f000001", 443}, {"https", "bücher.de", 443},
				{"https", "", 443}, {"https", "a..b", 443},
			},
		},
		{
			name:    "ip literals only literally",
			rules:   []string{"127.0.0.1", "[::1]"},
			allowed: []req{{"http", "127.0.0.1", 8080}, {"http", "::1", 80}, {"http", "[::1]", 80}, {"http", "::ffff:127.0.0.1", 80}},
			denied:  []req{{"http", "127.0.0.2", 80}, {"http", "localhost", 80}, {"http", "127.1", 80}, {"http", "fe80::1%eth0", 80}},
		},
	}
	for _, tc := range tests {
		g := hostGrant(t, tc.rules...)
		t.Run(tc.name+"/allowed", func(t *testing.T) {
			for _, r := range tc.allowed {
				if !g.AllowsHost(r.scheme, r.host, r.port) {
					t.Errorf("AllowsHost(%q, %q, %d) = false under %q", r.scheme, r.host, r.port, tc.rules)
				}
			}
		})
		t.Run(tc.name+"/denied", func(t *testing.T) {
			for _, r := range tc.denied {
				if g.AllowsHost(r.scheme, r.host, r.port) {
					t.Errorf("AllowsHost(%q, %q, %d) = true under %q", r.scheme, r.host, r.port, tc.rules)
				}
			}
		})
	}
}

func TestAllowsHost_deniedGrant(t *testing.T) {
	g := hostGrant(t, "*")
	g.Denied = true
	if g.AllowsHost("https", "example.com", 443) {
		t.Fatal("a denied grant allows a host")
	}
	var nilGrant *policy.Grant
	if nilGrant.AllowsHost("https", "example.com", 443) {
		t.Fatal("a nil grant allows a host")
	}
}
