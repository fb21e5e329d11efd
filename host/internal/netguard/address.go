package netguard

import "net/netip"

// Address classes refused unless Options.AllowPrivate is set.
var (
	prefixThisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	prefixCGNAT       = netip.MustParsePrefix("100.64.0.0/10")
	prefixIETF        = netip.MustParsePrefix("192.0.0.0/24")
	prefixBenchmark   = netip.MustParsePrefix("198.18.0.0/15")
	prefixReserved    = netip.MustParsePrefix("240.0.0.0/4")
	prefixSiteLocal   = netip.MustParsePrefix("fec0::/10")
	prefixNAT64       = netip.MustParsePrefix("64:ff9b::/96")
	prefixNAT64Local  = netip.MustParsePrefix("64:ff9b:1::/48")
	prefix6to4        = netip.MustParsePrefix("2002::/16")
	prefixV4Compat    = netip.MustParsePrefix("::/96")

	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, ...
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	}
)

// addressClass returns why ip is not a public unicast address ("" when it
// is one). IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible, NAT64 and 6to4
// forms are judged by the IPv4 address they embed.
func addressClass(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	ip = ip.WithZone("").Unmap()
	for _, m := range metadataAddrs {
		if ip == m {
			return "metadata address"
		}
	}
	switch {
	case ip.IsUnspecified(), prefixThisNetwork.Contains(ip):
		return "unspecified address"
	case ip.IsLoopback():
		return "loopback address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local address"
	case ip.IsPrivate(), prefixSiteLocal.Contains(ip):
		return "private address"
	case prefixCGNAT.Contains(ip):
		return "shared (CGNAT) address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast address"
	case prefixIETF.Contains(ip), prefixBenchmark.Contains(ip), prefixReserved.Contains(ip):
		return "reserved address"
	}
	if ip.Is6() {
		b := ip.As16()
		var embedded netip.Addr
		switch {
		case prefixNAT64.Contains(ip), prefixNAT64Local.Contains(ip), prefixV4Compat.Contains(ip):
			embedded = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case prefix6to4.Contains(ip):
			embedded = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		}
		if embedded.IsValid() {
			if c := addressClass(embedded); c != "" {
				return c + " (embedded in " + ip.String() + ")"
			}
		}
	}
	return ""
}
