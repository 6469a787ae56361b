package outbound

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// allowList is the parsed Config.Allow.
type allowList struct {
	prefixes []netip.Prefix
	hosts    map[string]bool // exact names, lower case, no trailing dot
	suffixes []string        // from "*.example.internal": ".example.internal"
}

// parseAllow parses every entry and reports every bad one, each naming its
// index and text, so an operator fixes the whole list in one go.
func parseAllow(entries []string) (allowList, error) {
	al := allowList{hosts: map[string]bool{}}
	var errs []error
	for i, e := range entries {
		p, host, err := parseAllowEntry(e)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("outbound_allow[%d] %q: %w", i, e, err))
		case host == "":
			al.prefixes = append(al.prefixes, p)
		case strings.HasPrefix(host, "*."):
			al.suffixes = append(al.suffixes, host[1:])
		default:
			al.hosts[host] = true
		}
	}
	return al, errors.Join(errs...)
}

// parseAllowEntry parses one allow-list entry: a CIDR prefix
// ("10.0.0.0/8", "fd00::/8"), a single address ("127.0.0.1", "::1"), a
// host name ("hooks.internal") or a wildcard over a domain's subdomains
// ("*.hooks.internal"). It returns either a prefix or a normalized host.
func parseAllowEntry(e string) (netip.Prefix, string, error) {
	s := strings.TrimSpace(e)
	if s == "" {
		return netip.Prefix{}, "", errors.New("empty entry")
	}
	if strings.Contains(s, "://") {
		return netip.Prefix{}, "", errors.New("a URL; give a host name, an address or a CIDR prefix (no scheme)")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, "", fmt.Errorf("not a CIDR prefix (want e.g. 10.0.0.0/8 or fd00::/8): %v", err)
		}
		// Addresses are unmapped before matching, so an IPv4-mapped
		// prefix would never match: turn it into the IPv4 prefix it means.
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, "", errors.New("an IPv4-mapped prefix shorter than /96 also spans non-mapped IPv6; write the IPv4 and IPv6 prefixes separately")
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if m := p.Masked(); m != p {
			return netip.Prefix{}, "", fmt.Errorf("has host bits set; did you mean %q?", m.String())
		}
		return p, "", nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return netip.Prefix{}, "", errors.New("zoned addresses are not supported; give the address without %zone")
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), "", nil
	}
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") > 1 {
		return netip.Prefix{}, "", errors.New("not a valid IPv6 address (write it without brackets or port)")
	}
	if strings.Contains(s, ":") {
		return netip.Prefix{}, "", errors.New("ports are not supported; give the host name or address alone")
	}
	host := strings.ToLower(strings.TrimSuffix(s, "."))
	name := host
	if strings.HasPrefix(host, "*.") {
		name = host[2:]
	}
	if err := checkHostName(name); err != nil {
		return netip.Prefix{}, "", err
	}
	return netip.Prefix{}, host, nil
}

// checkHostName accepts an ASCII DNS name as the HTTP transport dials it:
// labels of letters, digits, '-' and '_' (some internal zones use it), 1 to
// 63 bytes each, at most 253 in all. Internationalized names must be given
// in their xn-- form, which is what is dialled and matched. A name whose
// last label is all digits is refused: "10.0.0" or "2130706433" is a
// mistyped or obfuscated address, not a host name.
func checkHostName(name string) error {
	if name == "" {
		return errors.New("empty host name")
	}
	if len(name) > 253 {
		return errors.New("host name longer than 253 bytes")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return errors.New("host name has an empty label")
		}
		if len(l) > 63 {
			return errors.New("host name label longer than 63 bytes")
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("host name label %q starts or ends with '-'", l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
			case c == '*':
				return errors.New("'*' is only allowed as a whole first label (*.example.internal)")
			case c >= 0x80:
				return errors.New("not ASCII; give an internationalized name in its xn-- (punycode) form")
			default:
				return fmt.Errorf("invalid character %q in host name", c)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return errors.New("neither a valid address nor a host name (its last label is numeric)")
	}
	return nil
}

// prefixAllowed reports whether an allow-list prefix contains addr (already
// normalized).
func (al allowList) prefixAllowed(addr netip.Addr) bool {
	for _, p := range al.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// hostAllowed reports whether the host name being dialled is allow-listed.
// IP literals never match a name.
func (al allowList) hostAllowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	if al.hosts[host] {
		return true
	}
	for _, s := range al.suffixes {
		if strings.HasSuffix(host, s) && len(host) > len(s) {
			return true
		}
	}
	return false
}
