package outbound

import (
	"fmt"
	"net/netip"
)

// kind says how an address range is treated.
type kind int

const (
	// public addresses are reachable by default.
	public kind = iota
	// private covers every non-public unicast range (RFC 1918, loopback,
	// link-local, CGNAT, unique-local, documentation, …): refused unless
	// AllowPrivate is set or the allow-list covers the target.
	private
	// metadata is a cloud instance-metadata or platform endpoint, the
	// classic SSRF prize (it hands out credentials). AllowPrivate does not
	// reach it, nor does an allow-listed host name: only an allow-list
	// prefix that contains the address does, so it can never be exposed by
	// accident.
	metadata
	// never is an address that is not a unicast destination at all
	// (unspecified, multicast, broadcast, 0.0.0.0/8). Connecting to
	// 0.0.0.0 or :: reaches the local host on Linux, a well-known way
	// around naive loopback checks, so no setting allows these.
	never
)

// rangeInfo names the range an address falls in.
type rangeInfo struct {
	prefix netip.Prefix
	name   string
	kind   kind
}

func r(prefix, name string, k kind) rangeInfo {
	return rangeInfo{netip.MustParsePrefix(prefix), name, k}
}

// The special-purpose ranges, most specific first (the first match wins).
// Sources: the IANA IPv4 and IPv6 Special-Purpose Address Registries
// (RFC 6890 and successors) and the cloud providers' metadata addresses.
var (
	v4Ranges = []rangeInfo{
		r("0.0.0.0/8", "\"this network\" 0.0.0.0/8", never),
		r("255.255.255.255/32", "broadcast", never),
		r("224.0.0.0/4", "multicast", never),

		r("169.254.169.254/32", "link-local, cloud metadata endpoint", metadata),
		r("169.254.170.2/32", "link-local, container metadata endpoint", metadata),
		r("169.254.170.23/32", "link-local, container credentials endpoint", metadata),
		r("100.100.100.200/32", "cloud metadata endpoint", metadata),
		r("168.63.129.16/32", "Azure platform endpoint", metadata),

		r("127.0.0.0/8", "loopback", private),
		r("10.0.0.0/8", "private", private),
		r("172.16.0.0/12", "private", private),
		r("192.168.0.0/16", "private", private),
		r("169.254.0.0/16", "link-local", private),
		r("100.64.0.0/10", "carrier-grade NAT", private),
		r("192.0.0.0/24", "IETF protocol assignments", private),
		r("192.0.2.0/24", "documentation", private),
		r("198.51.100.0/24", "documentation", private),
		r("203.0.113.0/24", "documentation", private),
		r("192.88.99.0/24", "6to4 relay anycast", private),
		r("198.18.0.0/15", "benchmarking", private),
		r("240.0.0.0/4", "reserved", private),
	}

	v6Ranges = []rangeInfo{
		r("::/128", "unspecified", never),
		r("ff00::/8", "multicast", never),

		r("fd00:ec2::254/128", "unique-local, cloud metadata endpoint", metadata),
		r("fd00:ec2::23/128", "unique-local, container credentials endpoint", metadata),

		r("::1/128", "loopback", private),
		r("::/96", "IPv4-compatible (deprecated)", private),
		r("64:ff9b:1::/48", "local-use NAT64", private),
		r("100::/64", "discard-only", private),
		r("2001::/32", "Teredo", private),
		r("2001:db8::/32", "documentation", private),
		r("2001::/23", "IETF protocol assignments", private),
		// 6to4 embeds an IPv4 address that a relay would forward to;
		// the mechanism is deprecated (RFC 7526), so refuse it whole
		// rather than decode it.
		r("2002::/16", "6to4", private),
		r("3fff::/20", "documentation", private),
		r("5f00::/16", "SRv6 SIDs", private),
		r("fc00::/7", "unique-local", private),
		r("fe80::/10", "link-local", private),
		r("fec0::/10", "site-local (deprecated)", private),
	}

	// Every IPv6 address outside 2000::/3 that the table does not name is
	// reserved by IANA: nothing public lives there.
	globalUnicast = netip.MustParsePrefix("2000::/3")
	// The well-known NAT64 prefix maps the whole IPv4 Internet into IPv6
	// (RFC 6052) on IPv6-only networks with DNS64, so it is judged by the
	// IPv4 address it embeds: public hosts stay reachable, 64:ff9b::a00:1
	// is 10.0.0.1 and is refused like it.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// classify says which range addr is in. addr must have no zone and IPv4
// addresses must be unmapped (see normalize).
func classify(addr netip.Addr) rangeInfo {
	if addr.Is4() {
		for _, ri := range v4Ranges {
			if ri.prefix.Contains(addr) {
				return ri
			}
		}
		return rangeInfo{name: "public", kind: public}
	}
	if nat64.Contains(addr) {
		b := addr.As16()
		v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		ri := classify(v4)
		if ri.kind != public {
			ri.name = fmt.Sprintf("NAT64 of %s, %s", v4, ri.name)
		}
		return ri
	}
	for _, ri := range v6Ranges {
		if ri.prefix.Contains(addr) {
			return ri
		}
	}
	if !globalUnicast.Contains(addr) {
		return rangeInfo{name: "reserved", kind: private}
	}
	return rangeInfo{name: "public", kind: public}
}

// normalize strips an IPv6 zone (fe80::1%eth0) and unmaps IPv4-mapped IPv6
// (::ffff:127.0.0.1), so that every spelling of an address is judged, and
// matched against the allow-list, as the address the kernel will connect
// to. netip.Prefix.Contains is false for zoned addresses, so without this a
// zone would slip past every range.
func normalize(addr netip.Addr) netip.Addr {
	return addr.WithZone("").Unmap()
}
