// Package outbound is the HTTP client for every request Sovereign makes on
// a user's behalf to a URL the user chose: webhook deliveries and the
// `http` step of workflows. Such a URL is an SSRF vector — pointed at
// 127.0.0.1, 10.0.0.0/8 or 169.254.169.254, the server would fetch its own
// admin endpoints, the internal network or the cloud's credentials — so
// this client refuses every non-public destination unless the operator
// allows it.
//
// The check is made on the address actually dialled, after DNS resolution:
// the client resolves the host itself, judges every address, and connects
// to the checked address literally, so a name resolving to 127.0.0.1 is
// refused and DNS rebinding (a name answering a public address to an early
// check and a private one to the connection) gains nothing. The dialer's
// Control hook checks the socket's address once more just before connect,
// as a last line. Redirects are followed (at most Config.MaxRedirects) and
// each hop's URL and connection go through the same checks.
//
// No proxy is used, whatever HTTP_PROXY says: through a proxy the client
// would dial the proxy, not the target, and the address check would judge
// the wrong host.
//
// Use one Client for many requests (it pools connections) and read
// docs/outbound.md for the operator's side.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/idna"
)

// Defaults for the zero values of Config's fields.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxResponseBytes = 1 << 20 // 1 MiB
	DefaultMaxRedirects     = 5
)

// maxHeaderBytes bounds response headers, which MaxResponseBytes (a body
// limit) does not cover; Go's default is 1 MB.
const maxHeaderBytes = 64 << 10

// Config configures a Client. The zero value is usable: public targets
// only, DefaultTimeout, DefaultMaxResponseBytes, DefaultMaxRedirects.
type Config struct {
	// Allow lists destinations allowed even though they are not public
	// (the operator's `outbound_allow`). Each entry is one of:
	//   - a CIDR prefix, "10.0.0.0/8" or "fd00::/8";
	//   - an address, "127.0.0.1" or "::1" (a /32 or /128);
	//   - a host name, "hooks.internal": any address it resolves to is
	//     allowed, for requests to that name only (not to other names or
	//     literal addresses that resolve to the same place);
	//   - a wildcard, "*.hooks.internal": every subdomain, not the apex.
	// Entries carry no port: an allowed address is allowed on every port.
	// Names are ASCII (xn-- form for internationalized ones).
	Allow []string
	// AllowPrivate allows every non-public unicast destination (loopback,
	// RFC 1918, link-local, unique-local, …) — for tests and for
	// deployments whose hooks all live on a private network. It does not
	// cover cloud metadata endpoints (169.254.169.254 and the like): those
	// need an Allow prefix that contains them. Unspecified, multicast and
	// broadcast addresses are refused whatever the settings.
	AllowPrivate bool
	// Timeout bounds a whole exchange: connection, redirects, headers and
	// reading the body (0: DefaultTimeout).
	Timeout time.Duration
	// MaxResponseBytes bounds the response body read by Do and
	// DoTruncated, after transparent gzip decoding, so a compressed bomb
	// is bounded too (0: DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// MaxRedirects is how many redirects are followed (0:
	// DefaultMaxRedirects); negative follows none: the 3xx response
	// itself is returned.
	MaxRedirects int
	// Resolver resolves host names (nil: net.DefaultResolver). Tests set
	// it to make a name resolve where they want.
	Resolver Resolver
}

// Resolver resolves a host name to its addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Errors that callers may test for with errors.Is. A refused address is a
// *BlockedError (errors.As).
var (
	// ErrInvalidURL: the URL is malformed, not http(s), has no host, or
	// carries user info.
	ErrInvalidURL = errors.New("invalid URL")
	// ErrTooManyRedirects: the target redirected more than MaxRedirects
	// times.
	ErrTooManyRedirects = errors.New("too many redirects")
	// ErrResponseTooLarge: the response body exceeds MaxResponseBytes
	// (from Do; DoTruncated truncates instead).
	ErrResponseTooLarge = errors.New("response body too large")
)

// BlockedError is a refused destination address: IP is what Host resolved
// to (or Host itself when it is an address) and Reason names its range
// ("loopback", "private", "link-local, cloud metadata endpoint", …).
type BlockedError struct {
	Host   string
	IP     netip.Addr
	Reason string
	kind   kind
}

func (e *BlockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "outbound: refusing %s (%s)", e.IP, e.Reason)
	if e.Host != "" && e.Host != e.IP.String() {
		fmt.Fprintf(&b, " for host %q", e.Host)
	}
	switch e.kind {
	case never:
		b.WriteString(": not a unicast destination, never allowed")
	case metadata:
		b.WriteString(": metadata endpoints are refused unless an outbound_allow prefix contains the address")
	default:
		b.WriteString(": private targets are not allowed (allow them with outbound_allow)")
	}
	return b.String()
}

// Refused reports whether err is a refusal by this package's policy — a
// blocked address, an invalid URL or too many redirects — rather than a
// network failure or a slow or oversized response. A refused URL stays
// refused until the configuration or the target's DNS changes, so an API
// reports it as the caller's mistake (400) and a delivery need not be
// retried soon.
func Refused(err error) bool {
	var b *BlockedError
	return errors.As(err, &b) || errors.Is(err, ErrInvalidURL) || errors.Is(err, ErrTooManyRedirects)
}

// Client makes outbound requests to user-chosen URLs. It is safe for
// concurrent use.
type Client struct {
	cfg      Config
	allow    allowList
	resolver Resolver
	hc       *http.Client
}

// New validates cfg, fills in its defaults and returns a Client. Every bad
// Allow entry is reported, each by its index and text.
func New(cfg Config) (*Client, error) {
	var errs []error
	if cfg.Timeout < 0 {
		errs = append(errs, fmt.Errorf("outbound: timeout %s is negative", cfg.Timeout))
	}
	if cfg.MaxResponseBytes < 0 {
		errs = append(errs, fmt.Errorf("outbound: max response bytes %d is negative", cfg.MaxResponseBytes))
	}
	al, err := parseAllow(cfg.Allow)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.MaxRedirects == 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	}
	c := &Client{cfg: cfg, allow: al, resolver: cfg.Resolver}
	if c.resolver == nil {
		c.resolver = net.DefaultResolver
	}
	tr := &http.Transport{
		// Never a proxy: see the package comment.
		Proxy:                  nil,
		DialContext:            c.dialContext,
		ForceAttemptHTTP2:      true, // a custom DialContext turns it off otherwise
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	c.hc = &http.Client{
		Transport:     tr,
		Timeout:       cfg.Timeout,
		CheckRedirect: c.checkRedirect,
	}
	return c, nil
}

// Config returns the configuration in effect, defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// HTTPClient returns the guarded *http.Client underneath, for a caller
// that must stream a response. Every address and redirect check still
// applies, and so does the timeout; bounding the body is then the
// caller's job. It does not check the first URL's user info: call
// ValidateURL first, or use Do.
func (c *Client) HTTPClient() *http.Client { return c.hc }

// DialContext dials addr as the Client's own transport does: the host is
// resolved, every address checked against the policy, and the address
// connected to is the one checked. Other transports (the upstream pool's)
// use it to put their connections under the same rules.
func (c *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return c.dialContext(ctx, network, addr)
}

// CloseIdleConnections closes pooled connections that are not in use.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Response is a response whose body has been read, within
// MaxResponseBytes, and closed.
type Response struct {
	StatusCode int
	Status     string // "200 OK"
	Header     http.Header
	Body       []byte
	// Truncated is set by DoTruncated when the body was longer than
	// MaxResponseBytes; Body then holds its first MaxResponseBytes.
	Truncated bool
	// URL is the URL that answered, after redirects.
	URL *url.URL
}

// Do sends req (its context bounds it as well as Config.Timeout) and
// reads the response body. A body longer than MaxResponseBytes is an
// error wrapping ErrResponseTooLarge — for a workflow's http step, whose
// output must be whole. A refused URL, address or redirect is an error
// for which Refused is true (a *BlockedError for an address).
func (c *Client) Do(req *http.Request) (*Response, error) {
	resp, err := c.do(req)
	if err == nil && resp.Truncated {
		return nil, fmt.Errorf("outbound: %w: the body from %s exceeds %d bytes", ErrResponseTooLarge, resp.URL.Redacted(), c.cfg.MaxResponseBytes)
	}
	return resp, err
}

// DoTruncated is Do, except that a body longer than MaxResponseBytes is
// cut there and Response.Truncated set, not an error — for webhook
// deliveries, whose log records the start of what the receiver said.
func (c *Client) DoTruncated(req *http.Request) (*Response, error) {
	return c.do(req)
}

func (c *Client) do(req *http.Request) (*Response, error) {
	if req == nil || req.URL == nil {
		return nil, fmt.Errorf("outbound: %w: no URL", ErrInvalidURL)
	}
	if err := checkURL(req.URL); err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, cleanErr(req, err)
	}
	defer resp.Body.Close()
	// Read one byte more than allowed to tell "exactly the limit" from
	// "over it".
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("outbound: reading the response from %s: %w", resp.Request.URL.Redacted(), err)
	}
	out := &Response{
		StatusCode: resp.StatusCode,
		Status:     resp.Status,
		Header:     resp.Header,
		Body:       body,
		URL:        resp.Request.URL,
	}
	if int64(len(body)) > c.cfg.MaxResponseBytes {
		out.Body = body[:c.cfg.MaxResponseBytes]
		out.Truncated = true
	}
	return out, nil
}

// cleanErr returns a policy error alone, without the *url.Error around it
// ("Post \"http://…\": outbound: refusing …"), so that its message reads
// as written; other errors keep the *url.Error, whose method and URL say
// where a network failure happened.
//
// A blocked address met on a redirect says so: the address refused is not
// the one the user gave, and the user should learn where it came from.
func cleanErr(req *http.Request, err error) error {
	if !Refused(err) {
		return err
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	var b *BlockedError
	if errors.As(err, &b) {
		if ue.URL != req.URL.String() {
			return fmt.Errorf("%w; after a redirect to %s", b, ue.URL)
		}
		return b
	}
	return ue.Err
}

// ValidateURL checks rawURL now, for early feedback when a webhook or a
// workflow is saved: it must parse, be http or https, have a host and no
// user info, and every address the host resolves to must be allowed. A
// policy refusal is an error for which Refused is true; a name that does
// not resolve is an error for which it is false. Passing is no promise —
// DNS can change before the request — which is why Do checks again at
// connection time.
func (c *Client) ValidateURL(ctx context.Context, rawURL string) error {
	u, err := ParseURL(rawURL)
	if err != nil {
		return err
	}
	// Judge the name in the form the transport will dial: net/http turns
	// a non-ASCII host into its xn-- form and leaves ASCII alone.
	host := u.Hostname()
	if !isASCII(host) {
		ascii, err := idna.Lookup.ToASCII(host)
		if err != nil {
			return fmt.Errorf("outbound: %w %q: host: %v", ErrInvalidURL, u.Redacted(), err)
		}
		host = ascii
	}
	addrs, err := c.resolve(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := c.check(host, a); err != nil {
			return err
		}
	}
	return nil
}

// ParseURL parses rawURL and checks its form (http or https, a host, a
// valid port, no user info) without resolving anything.
func ParseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the URL and says what is wrong with it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("outbound: %w %q: %v", ErrInvalidURL, rawURL, err)
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL checks a parsed URL's form; it runs on the first URL and on
// every redirect.
//
// User info is refused: credentials in a URL end up in logs and in the
// delivery log shown to users, and "https://trusted.example@evil.example/"
// misleads whoever reads it. Callers send credentials in headers.
func checkURL(u *url.URL) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("outbound: %w %q: %s", ErrInvalidURL, u.Redacted(), fmt.Sprintf(format, a...))
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return bad("no scheme; only http and https are allowed")
	default:
		return bad("scheme %q is not allowed; only http and https are", u.Scheme)
	}
	if u.User != nil {
		return bad("user info is not allowed in the URL; send credentials in a header")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return bad("no host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("invalid port %q", p)
		}
	}
	return nil
}

// checkRedirect vets each redirect before it is followed: its count and
// its URL's form. Its address is checked when its connection is dialled.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if c.cfg.MaxRedirects < 0 {
		return http.ErrUseLastResponse
	}
	if len(via) > c.cfg.MaxRedirects {
		return fmt.Errorf("outbound: %w: stopped after %d redirects, at %s", ErrTooManyRedirects, c.cfg.MaxRedirects, req.URL.Redacted())
	}
	if err := checkURL(req.URL); err != nil {
		return fmt.Errorf("%w (redirected from %s)", err, via[len(via)-1].URL.Redacted())
	}
	return nil
}

// check decides whether host, resolved to addr, may be connected to: a
// public address may; an allow-list prefix containing it allows any
// address but the never kind; AllowPrivate and an allow-listed host name
// allow the private kind only, not metadata endpoints.
func (c *Client) check(host string, addr netip.Addr) error {
	a := normalize(addr)
	ri := classify(a)
	switch {
	case ri.kind == never:
		// Refused whatever the settings, even 0.0.0.0/0 in the list.
	case c.allow.prefixAllowed(a), ri.kind == public:
		return nil
	case ri.kind == private && (c.cfg.AllowPrivate || c.allow.hostAllowed(host)):
		return nil
	}
	if addr.Is4In6() {
		ri.name = "IPv4-mapped " + ri.name
	}
	return &BlockedError{Host: host, IP: addr, Reason: ri.name, kind: ri.kind}
}

// resolve returns host's addresses: host itself if it is an address.
func (c *Client) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	addrs, err := c.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("outbound: resolving %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("outbound: resolving %q: no addresses", host)
	}
	return addrs, nil
}

// control is the dialer's last line: it judges the socket's own address
// right before connect(2), whatever path led there.
func (c *Client) control(host string) func(network, address string, rc syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("outbound: unexpected dial address %q", address)
		}
		return c.check(host, ap.Addr())
	}
}

// dialContext is the transport's dialer. It resolves addr's host, refuses
// the connection if any of its addresses is refused (a name that mixes
// public and private answers is not trusted to pick the public one), and
// connects to the checked addresses by literal, one after the other, so
// the address connected to is the address checked.
func (c *Client) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("outbound: dial %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("outbound: dial %q: invalid port", addr)
	}
	addrs, err := c.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if err := c.check(host, a); err != nil {
			return nil, err
		}
	}
	var firstErr error
	for i, a := range addrs {
		if (network == "tcp4" && !a.Unmap().Is4()) || (network == "tcp6" && a.Unmap().Is4()) {
			continue
		}
		d := net.Dialer{
			KeepAlive: 30 * time.Second,
			Control:   c.control(host),
		}
		// Share what is left of the deadline between the addresses left,
		// as net.Dialer does, so one black hole does not use it all.
		if dl, ok := ctx.Deadline(); ok {
			if left := len(addrs) - i; left > 1 {
				d.Timeout = max(time.Until(dl)/time.Duration(left), 2*time.Second)
			}
		}
		conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("outbound: %q has no %s address", host, network)
	}
	return nil, firstErr
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
