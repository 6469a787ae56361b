package outbound

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseAllowEntry(t *testing.T) {
	for _, tc := range []struct {
		in     string
		prefix string // the prefix it parses to, or
		host   string // the host
	}{
		{"10.0.0.0/8", "10.0.0.0/8", ""},
		{" 192.168.0.0/16 ", "192.168.0.0/16", ""},
		{"127.0.0.1", "127.0.0.1/32", ""},
		{"::1", "::1/128", ""},
		{"fd00::/8", "fd00::/8", ""},
		{"::ffff:127.0.0.1", "127.0.0.1/32", ""},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", ""},
		{"0.0.0.0/0", "0.0.0.0/0", ""},
		{"hooks.internal", "", "hooks.internal"},
		{"Hooks.Internal.", "", "hooks.internal"},
		{"my_svc.corp", "", "my_svc.corp"},
		{"xn--bcher-kva.example", "", "xn--bcher-kva.example"},
		{"*.svc.cluster.local", "", "*.svc.cluster.local"},
		{"localhost", "", "localhost"},
	} {
		p, host, err := parseAllowEntry(tc.in)
		if err != nil {
			t.Errorf("parseAllowEntry(%q): %v", tc.in, err)
			continue
		}
		if tc.host != "" {
			if host != tc.host {
				t.Errorf("parseAllowEntry(%q) host = %q, want %q", tc.in, host, tc.host)
			}
		} else if host != "" || p.String() != tc.prefix {
			t.Errorf("parseAllowEntry(%q) = %s %q, want %s", tc.in, p, host, tc.prefix)
		}
	}
}

func TestParseAllowErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty entry"},
		{"   ", "empty entry"},
		{"https://hooks.internal", "a URL"},
		{"10.1.2.3/8", `did you mean "10.0.0.0/8"?`},
		{"10.0.0.0/33", "not a CIDR prefix"},
		{"10.0.0/8", "not a CIDR prefix"},
		{"hooks.internal/8", "not a CIDR prefix"},
		{"::ffff:0:0/80", "IPv4-mapped prefix shorter than /96"},
		{"fe80::1%eth0", "zoned"},
		{"[::1]", "not a valid IPv6 address"},
		{"[::1]:80", "not a valid IPv6 address"},
		{"fe80:::1", "not a valid IPv6 address"},
		{"hooks.internal:8080", "ports are not supported"},
		{"127.0.0.1:80", "ports are not supported"},
		{"10.0.0", "last label is numeric"},
		{"2130706433", "last label is numeric"},
		{"bücher.example", "xn--"},
		{"hooks..internal", "empty label"},
		{".hooks.internal", "empty label"},
		{"-hooks.internal", "starts or ends with '-'"},
		{"hooks-.internal", "starts or ends with '-'"},
		{"hooks internal", "invalid character"},
		{"*", "'*' is only allowed"},
		{"*.", "'*' is only allowed"},
		{"**.internal", "'*' is only allowed"},
		{"a.*.internal", "'*' is only allowed"},
		{"*hooks.internal", "'*' is only allowed"},
		{strings.Repeat("a", 64) + ".internal", "longer than 63"},
		{strings.Repeat("a.", 127) + "internal", "longer than 253"},
	} {
		_, _, err := parseAllowEntry(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseAllowEntry(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestAllowMatching(t *testing.T) {
	al, err := parseAllow([]string{"10.0.0.0/8", "::1", "hooks.internal", "*.svc.local"})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"10.255.0.1": true, "11.0.0.1": false, "::1": true, "127.0.0.1": false,
	} {
		if got := al.prefixAllowed(netip.MustParseAddr(addr)); got != want {
			t.Errorf("prefixAllowed(%s) = %v", addr, got)
		}
	}
	for host, want := range map[string]bool{
		"hooks.internal":       true,
		"HOOKS.INTERNAL.":      true,
		"x.hooks.internal":     false, // an exact name covers no subdomain
		"a.svc.local":          true,
		"a.b.svc.local":        true,
		"svc.local":            false, // a wildcard covers no apex
		"evilsvc.local":        false,
		"hooks.internal.evil":  false,
		"":                     false,
		"10.0.0.1":             false,
		"hooks.internal:80":    false,
		"xhooks.internal":      false,
		"a.svc.local.evil.com": false,
	} {
		if got := al.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}
