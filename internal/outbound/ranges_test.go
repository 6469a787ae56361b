package outbound

import (
	"net/netip"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		addr string
		kind kind
		name string // a substring of the range's name
	}{
		// Public.
		{"93.184.215.14", public, "public"},
		{"8.8.8.8", public, "public"},
		{"1.1.1.1", public, "public"},
		{"100.63.255.255", public, "public"},  // just below CGNAT
		{"100.128.0.0", public, "public"},     // just above CGNAT
		{"172.15.255.255", public, "public"},  // just below 172.16/12
		{"172.32.0.0", public, "public"},      // just above
		{"223.255.255.255", public, "public"}, // just below multicast
		{"2606:4700::6810:84e5", public, "public"},
		{"2a00:1450:4001::200e", public, "public"},
		{"64:ff9b::808:808", public, "public"}, // NAT64 of 8.8.8.8

		// Never dialable.
		{"0.0.0.0", never, "this network"},
		{"0.1.2.3", never, "this network"},
		{"255.255.255.255", never, "broadcast"},
		{"224.0.0.1", never, "multicast"},
		{"239.255.255.250", never, "multicast"},
		{"::", never, "unspecified"},
		{"ff02::1", never, "multicast"},
		{"64:ff9b::", never, "NAT64 of 0.0.0.0"},

		// Metadata.
		{"169.254.169.254", metadata, "cloud metadata"},
		{"169.254.170.2", metadata, "container metadata"},
		{"100.100.100.200", metadata, "cloud metadata"},
		{"168.63.129.16", metadata, "Azure"},
		{"fd00:ec2::254", metadata, "cloud metadata"},
		{"64:ff9b::a9fe:a9fe", metadata, "NAT64 of 169.254.169.254"},

		// Private and otherwise non-public.
		{"127.0.0.1", private, "loopback"},
		{"127.255.255.254", private, "loopback"},
		{"10.0.0.1", private, "private"},
		{"172.16.0.1", private, "private"},
		{"172.31.255.255", private, "private"},
		{"192.168.1.1", private, "private"},
		{"169.254.1.1", private, "link-local"},
		{"100.64.0.1", private, "carrier-grade NAT"},
		{"100.127.255.255", private, "carrier-grade NAT"},
		{"192.0.0.8", private, "IETF"},
		{"192.0.2.1", private, "documentation"},
		{"198.51.100.1", private, "documentation"},
		{"203.0.113.1", private, "documentation"},
		{"198.18.0.1", private, "benchmarking"},
		{"192.88.99.1", private, "6to4 relay"},
		{"240.0.0.1", private, "reserved"},
		{"::1", private, "loopback"},
		{"::7f00:1", private, "IPv4-compatible"},
		{"64:ff9b::a00:1", private, "NAT64 of 10.0.0.1, private"},
		{"64:ff9b:1::1", private, "local-use NAT64"},
		{"100::1", private, "discard"},
		{"2001::1", private, "Teredo"},
		{"2001:db8::1", private, "documentation"},
		{"2001:10::1", private, "IETF"},
		{"2002:7f00:1::1", private, "6to4"},
		{"3fff::1", private, "documentation"},
		{"5f00::1", private, "SRv6"},
		{"fc00::1", private, "unique-local"},
		{"fdff:ffff::1", private, "unique-local"},
		{"fe80::1", private, "link-local"},
		{"febf::1", private, "link-local"},
		{"fec0::1", private, "site-local"},
		{"4000::1", private, "reserved"},
		{"1::1", private, "reserved"},
	} {
		ri := classify(normalize(netip.MustParseAddr(tc.addr)))
		if ri.kind != tc.kind || !strings.Contains(ri.name, tc.name) {
			t.Errorf("classify(%s) = %v %q, want %v %q", tc.addr, ri.kind, ri.name, tc.kind, tc.name)
		}
	}
}

// Every spelling of an address is judged as the address: IPv4-mapped
// forms as their IPv4 address, zoned forms without the zone.
func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"::ffff:127.0.0.1":   "127.0.0.1",
		"::ffff:a9fe:a9fe":   "169.254.169.254",
		"fe80::1%eth0":       "fe80::1",
		"::ffff:10.0.0.1%lo": "10.0.0.1",
		"127.0.0.1":          "127.0.0.1",
	} {
		if got := normalize(netip.MustParseAddr(in)); got.String() != want {
			t.Errorf("normalize(%s) = %s, want %s", in, got, want)
		}
	}
}

func (k kind) String() string {
	return [...]string{"public", "private", "metadata", "never"}[k]
}
