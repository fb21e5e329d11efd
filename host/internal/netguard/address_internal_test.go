package netguard

import (
	"net/netip"
	"strings"
	"testing"
)

func TestAddressClass(t *testing.T) {
	tests := []struct {
		ip   string
		want string // substring; "" = public
	}{
		{"93.184.216.34", ""},
		{"8.8.8.8", ""},
		{"2606:4700::1111", ""},
		{"203.0.113.9", ""},
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"fec0::1", "private"},
		{"169.254.169.254", "metadata"},
		{"fd00:ec2::254", "metadata"},
		{"100.100.100.200", "metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.254", "CGNAT"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:169.254.169.254", "metadata"},
		{"64:ff9b::7f00:1", "loopback"},
		{"64:ff9b::a9fe:a9fe", "metadata"},
		{"2002:7f00:1::", "loopback"},
		{"2002:a00:1::", "private"},
		{"::127.0.0.1", "loopback"},
		{"224.0.0.1", "link-local"},
		{"239.1.2.3", "multicast"},
		{"ff02::1", "link-local"},
		{"ff0e::1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"240.0.0.1", "reserved"},
		{"192.0.0.8", "reserved"},
		{"198.18.0.1", "reserved"},
	}
	for _, tc := range tests {
		t.Run(tc.ip, func(t *testing.T) {
			got := addressClass(netip.MustParseAddr(tc.ip))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("addressClass(%s) = %q, want %q", tc.ip, got, tc.want)
			}
		})
	}
}
