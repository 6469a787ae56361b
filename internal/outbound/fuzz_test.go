package outbound

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

// FuzzParseAllowEntry: parsing never panics, and what it accepts is
// well-formed and parses back to itself.
func FuzzParseAllowEntry(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "127.0.0.1", "::1", "fd00::/8", "::ffff:10.0.0.0/104",
		"hooks.internal", "*.svc.local", "Hooks.Internal.", "10.1.2.3/8", "[::1]:80", "a:b",
		"https://x", "bücher.example", "fe80::1%eth0", "2130706433", "", "*", "*.", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, host, err := parseAllowEntry(s)
		if err != nil {
			return
		}
		if host == "" {
			if !p.IsValid() || p != p.Masked() || p.Addr().Zone() != "" || p.Addr().Is4In6() {
				t.Fatalf("%q: bad prefix %s", s, p)
			}
			p2, h2, err := parseAllowEntry(p.String())
			if err != nil || h2 != "" || p2 != p {
				t.Fatalf("%q: %s does not parse back: %s %q %v", s, p, p2, h2, err)
			}
			return
		}
		if host != strings.ToLower(host) || strings.HasSuffix(host, ".") || strings.ContainsAny(host, ":/[]% ") {
			t.Fatalf("%q: bad host %q", s, host)
		}
		if _, err := netip.ParseAddr(host); err == nil {
			t.Fatalf("%q: an address accepted as a host name", s)
		}
		_, h2, err := parseAllowEntry(host)
		if err != nil || h2 != host {
			t.Fatalf("%q: host %q does not parse back: %q %v", s, host, h2, err)
		}
	})
}

// FuzzValidateURL: no panic, and an accepted URL is http(s), has a host
// and no user info, and resolved only to allowed addresses.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{"http://example.com/", "https://a.b:443/x?y#z", "ftp://x", "http://u:p@x/",
		"http://[::1]/", "http://127.0.0.1:80/", "http://[fe80::1%25lo]/", "http://xn--bcher-kva.example/",
		"http://bücher.example/", "//x", "http:x", "http://:80", "HTTP://EXAMPLE.COM"} {
		f.Add(s)
	}
	c, err := New(Config{Resolver: resolverFunc(func(host string) ([]netip.Addr, error) {
		if strings.HasPrefix(host, "private") {
			return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	})})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := c.ValidateURL(context.Background(), s)
		u, perr := ParseURL(s)
		if perr != nil {
			if err == nil {
				t.Fatalf("%q: ValidateURL accepted what ParseURL refused: %v", s, perr)
			}
			return
		}
		if sc := strings.ToLower(u.Scheme); sc != "http" && sc != "https" {
			t.Fatalf("%q: scheme %q accepted", s, u.Scheme)
		}
		if u.User != nil || u.Hostname() == "" {
			t.Fatalf("%q: user info or empty host accepted", s)
		}
		if err != nil {
			return
		}
		if a, aerr := netip.ParseAddr(u.Hostname()); aerr == nil && classify(normalize(a)).kind != public {
			t.Fatalf("%q: non-public address %s accepted", s, a)
		}
	})
}

// FuzzCheck: every address is judged the same in all its spellings, and
// the settings only ever widen what is allowed in the documented way.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::1", "::ffff:10.0.0.1", "169.254.169.254", "8.8.8.8", "64:ff9b::a00:1", "fe80::1", "::"} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:])
	}
	strict, _ := New(Config{})
	loose, _ := New(Config{AllowPrivate: true})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 16 {
			return
		}
		a := netip.AddrFrom16([16]byte(b))
		ri := classify(normalize(a))
		if a.Is4In6() && classify(a.Unmap()) != ri {
			t.Fatalf("%s: mapped form classified %v, unmapped %v", a, ri, classify(a.Unmap()))
		}
		strictErr := strict.check("", a)
		looseErr := loose.check("", a)
		if (strictErr == nil) != (ri.kind == public) {
			t.Fatalf("%s (%s): strict check = %v", a, ri.name, strictErr)
		}
		if (looseErr == nil) != (ri.kind == public || ri.kind == private) {
			t.Fatalf("%s (%s): AllowPrivate check = %v", a, ri.name, looseErr)
		}
		if strictErr != nil && !strings.HasPrefix(strictErr.Error(), "outbound: refusing ") {
			t.Fatalf("%s: message %q", a, strictErr)
		}
	})
}
