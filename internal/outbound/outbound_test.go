package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers from a table; an unknown name does not resolve.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ss, ok := f[strings.ToLower(strings.TrimSuffix(host, "."))]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// resolverFunc adapts a function to Resolver.
type resolverFunc func(host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return f(host)
}

// counted is an httptest server on 127.0.0.1 that counts the requests it
// gets, so a test can show a refused target was never reached.
type counted struct {
	*httptest.Server
	hits atomic.Int64
}

func newCounted(t *testing.T, h http.HandlerFunc) *counted {
	t.Helper()
	c := &counted{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *counted) port() string {
	_, p, _ := net.SplitHostPort(c.Listener.Addr().String())
	return p
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func get(t *testing.T, c *Client, rawURL string) (*Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

// wantBlocked asserts err is a *BlockedError for ip whose message
// contains every one of want.
func wantBlocked(t *testing.T, err error, ip string, want ...string) *BlockedError {
	t.Helper()
	var b *BlockedError
	if !errors.As(err, &b) {
		t.Fatalf("err = %v, want a *BlockedError", err)
	}
	if b.IP.String() != ip {
		t.Errorf("IP = %s, want %s", b.IP, ip)
	}
	if !Refused(err) {
		t.Error("Refused(err) = false")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	return b
}

func TestLiteralTargetsRefused(t *testing.T) {
	srv := newCounted(t, nil)
	c := newClient(t, Config{})
	port := srv.port()
	for _, tc := range []struct{ host, ip, reason string }{
		{"127.0.0.1", "127.0.0.1", "(loopback)"},
		{"10.1.2.3", "10.1.2.3", "(private)"},
		{"169.254.169.254", "169.254.169.254", "cloud metadata"},
		{"[::1]", "::1", "(loopback)"},
		{"[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "IPv4-mapped loopback"},
		{"[::ffff:a01:203]", "::ffff:10.1.2.3", "IPv4-mapped private"},
		{"0.0.0.0", "0.0.0.0", "never allowed"},
		{"[::]", "::", "unspecified"},
		{"100.64.1.1", "100.64.1.1", "carrier-grade NAT"},
		{"[fd12::1]", "fd12::1", "unique-local"},
		{"[fe80::1%25lo]", "fe80::1%lo", "link-local"},
		{"[64:ff9b::7f00:1]", "64:ff9b::7f00:1", "NAT64 of 127.0.0.1"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			u := "http://" + tc.host + ":" + port + "/"
			_, err := get(t, c, u)
			wantBlocked(t, err, tc.ip, "outbound: refusing "+tc.ip, tc.reason)
			if err := c.ValidateURL(context.Background(), u); err == nil {
				t.Error("ValidateURL accepted it")
			} else {
				wantBlocked(t, err, tc.ip)
			}
		})
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("the loopback server got %d requests", n)
	}
}

func TestErrorMessage(t *testing.T) {
	c := newClient(t, Config{Resolver: fakeResolver{"localtest.me": {"127.0.0.1"}}})
	err := c.ValidateURL(context.Background(), "https://localtest.me/hook")
	const want = `outbound: refusing 127.0.0.1 (loopback) for host "localtest.me": private targets are not allowed (allow them with outbound_allow)`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}

func TestLocalhostRefused(t *testing.T) {
	srv := newCounted(t, nil)
	c := newClient(t, Config{})
	_, err := get(t, c, "http://localhost:"+srv.port()+"/")
	var b *BlockedError
	if !errors.As(err, &b) || b.Host != "localhost" || !b.IP.IsLoopback() {
		t.Fatalf("err = %v, want loopback refused for host localhost", err)
	}
	if !strings.Contains(err.Error(), `for host "localhost"`) {
		t.Errorf("error %q does not name the host", err)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("server got %d requests", n)
	}
}

// Names that net/http and netip do not take for addresses but a libc
// resolver does (inet_aton's decimal, hexadecimal, octal and short forms)
// go to the resolver, and what it answers is judged: a resolver that maps
// them to 127.0.0.1, as getaddrinfo does, gets them refused.
func TestObfuscatedLoopbackNeverReached(t *testing.T) {
	srv := newCounted(t, nil)
	var asked []string
	var mu sync.Mutex
	c := newClient(t, Config{Resolver: resolverFunc(func(host string) ([]netip.Addr, error) {
		mu.Lock()
		asked = append(asked, host)
		mu.Unlock()
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	})})
	hosts := []string{"2130706433", "0x7f000001", "0177.0.0.1", "127.1", "127.0.1", "0x7f.1"}
	for _, h := range hosts {
		_, err := get(t, c, "http://"+h+":"+srv.port()+"/")
		wantBlocked(t, err, "127.0.0.1", fmt.Sprintf("for host %q", h))
	}
	if len(asked) != len(hosts) {
		t.Errorf("resolver asked %q", asked)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("server got %d requests", n)
	}
}

func TestPublicLookingNameResolvingPrivate(t *testing.T) {
	res := fakeResolver{
		"hooks.example.com": {"10.0.0.1"},
		"mixed.example.com": {"93.184.215.14", "127.0.0.1"},
		"ok.example.com":    {"93.184.215.14", "2606:4700::6810:84e5"},
	}
	c := newClient(t, Config{Resolver: res})
	ctx := context.Background()

	_, err := get(t, c, "https://hooks.example.com/x")
	wantBlocked(t, err, "10.0.0.1", `for host "hooks.example.com"`, "(private)")
	wantBlocked(t, c.ValidateURL(ctx, "https://hooks.example.com/x"), "10.0.0.1")

	// One private answer among public ones is enough to refuse: the
	// resolver's owner is not trusted to have us pick the public one.
	wantBlocked(t, c.ValidateURL(ctx, "https://mixed.example.com/"), "127.0.0.1")

	if err := c.ValidateURL(ctx, "https://OK.example.com./hook?x=1"); err != nil {
		t.Errorf("public name refused: %v", err)
	}
	err = c.ValidateURL(ctx, "https://nowhere.example.com/")
	if err == nil || Refused(err) || !strings.Contains(err.Error(), `resolving "nowhere.example.com"`) {
		t.Errorf("unresolvable name: err = %v (Refused %v)", err, Refused(err))
	}
}

// DNS rebinding: the name answers a public address to ValidateURL and
// loopback to the request itself. The dial-time check catches it.
func TestDNSRebinding(t *testing.T) {
	srv := newCounted(t, nil)
	var calls atomic.Int64
	c := newClient(t, Config{Resolver: resolverFunc(func(host string) ([]netip.Addr, error) {
		if calls.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	})})
	u := "http://rebind.example.com:" + srv.port() + "/"
	if err := c.ValidateURL(context.Background(), u); err != nil {
		t.Fatalf("first answer was public: %v", err)
	}
	_, err := get(t, c, u)
	wantBlocked(t, err, "127.0.0.1", `for host "rebind.example.com"`)
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("server got %d requests", n)
	}
}

// The Control hook judges the socket's own address, so a dial that got
// past the resolver check by some other path is still refused.
func TestControlHook(t *testing.T) {
	c := newClient(t, Config{Allow: []string{"hooks.internal"}})
	for _, tc := range []struct {
		host, addr string
		ok         bool
	}{
		{"elsewhere.example", "127.0.0.1:80", false},
		{"hooks.internal", "127.0.0.1:80", true},
		{"hooks.internal", "[::ffff:127.0.0.1]:80", true},
		{"hooks.internal", "169.254.169.254:80", false}, // metadata needs a prefix
		{"hooks.internal", "0.0.0.0:80", false},
		{"hooks.internal", "[fe80::1%lo]:80", true},
		{"127.0.0.1", "127.0.0.1:80", false},
		{"example.com", "93.184.215.14:443", true},
		{"example.com", "not an address", false},
	} {
		err := c.control(tc.host)("tcp4", tc.addr, nil)
		if (err == nil) != tc.ok {
			t.Errorf("control(%q)(%s) = %v, want ok=%v", tc.host, tc.addr, err, tc.ok)
		}
	}
	// And a real dial through it: the connection is never attempted.
	d := net.Dialer{Control: c.control("elsewhere.example")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = d.Dial("tcp", ln.Addr().String())
	wantBlocked(t, err, "127.0.0.1", `for host "elsewhere.example"`)
}

func TestAllowListAndAllowPrivate(t *testing.T) {
	srv := newCounted(t, nil)
	port := srv.port()

	// An allow-listed prefix lets loopback through.
	c := newClient(t, Config{Allow: []string{"127.0.0.1/32"}})
	if resp, err := get(t, c, "http://127.0.0.1:"+port+"/"); err != nil || string(resp.Body) != "ok" {
		t.Fatalf("allow-listed prefix: resp %+v, err %v", resp, err)
	}
	// but not the rest of loopback.
	_, err := get(t, c, "http://127.0.0.2:"+port+"/")
	wantBlocked(t, err, "127.0.0.2")

	// An allow-listed name lets the name through, not the address.
	c = newClient(t, Config{Allow: []string{"hooks.internal", "*.svc.internal"},
		Resolver: fakeResolver{"hooks.internal": {"127.0.0.1"}, "a.svc.internal": {"127.0.0.1"}, "svc.internal": {"127.0.0.1"}}})
	for _, u := range []string{"http://hooks.internal:" + port + "/", "http://HOOKS.internal.:" + port + "/", "http://a.svc.internal:" + port + "/"} {
		if _, err := get(t, c, u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	_, err = get(t, c, "http://svc.internal:"+port+"/")
	wantBlocked(t, err, "127.0.0.1", `for host "svc.internal"`)
	_, err = get(t, c, "http://127.0.0.1:"+port+"/")
	wantBlocked(t, err, "127.0.0.1")

	// AllowPrivate lets a loopback receiver through, by address or name…
	c = newClient(t, Config{AllowPrivate: true})
	for _, u := range []string{"http://127.0.0.1:" + port + "/", "http://localhost:" + port + "/"} {
		if resp, err := get(t, c, u); err != nil || resp.StatusCode != 200 {
			t.Fatalf("AllowPrivate %s: %v", u, err)
		}
	}
	// …but not to the cloud metadata endpoint or the unspecified address.
	_, err = get(t, c, "http://169.254.169.254/latest/meta-data/")
	wantBlocked(t, err, "169.254.169.254", "outbound_allow prefix")
	_, err = get(t, c, "http://0.0.0.0:"+port+"/")
	wantBlocked(t, err, "0.0.0.0", "never allowed")

	// Not even an allow-list prefix makes an unspecified address a target.
	c = newClient(t, Config{Allow: []string{"0.0.0.0/0", "::/0"}})
	wantBlocked(t, c.ValidateURL(context.Background(), "http://0.0.0.0/"), "0.0.0.0", "never allowed")
	wantBlocked(t, c.ValidateURL(context.Background(), "http://[::]/"), "::", "never allowed")
	if err := c.ValidateURL(context.Background(), "http://10.9.8.7/"); err != nil {
		t.Errorf("0.0.0.0/0 allowed: %v", err)
	}

	// Only an explicit prefix reaches metadata.
	c = newClient(t, Config{Allow: []string{"169.254.169.254"}})
	if err := c.ValidateURL(context.Background(), "http://169.254.169.254/"); err != nil {
		t.Errorf("explicitly allowed metadata refused: %v", err)
	}
	if n := srv.hits.Load(); n != 6 {
		t.Errorf("server got %d requests, want 6", n)
	}
}

// A redirect from an allowed server to a loopback target that is not
// allowed is refused at the redirect's dial, and the target never hears
// of it.
func TestRedirectToLoopbackRefused(t *testing.T) {
	target := newCounted(t, nil)
	redirector := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})

	t.Run("allowed by name, redirected to another port by address", func(t *testing.T) {
		c := newClient(t, Config{Allow: []string{"hooks.test"}, Resolver: fakeResolver{"hooks.test": {"127.0.0.1"}}})
		to := "http://127.0.0.1:" + target.port() + "/"
		_, err := get(t, c, "http://hooks.test:"+redirector.port()+"/?to="+url.QueryEscape(to))
		wantBlocked(t, err, "127.0.0.1", "(loopback)", "; after a redirect to "+to)
	})

	t.Run("allowed by prefix, redirected to another loopback address", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Fatalf("cannot listen on 127.0.0.2 (Linux routes all of 127/8 to loopback): %v", err)
		}
		other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Error("the refused target was reached")
		}))
		other.Listener.Close()
		other.Listener = ln
		other.Start()
		defer other.Close()
		c := newClient(t, Config{Allow: []string{"127.0.0.1/32"}})
		_, err = get(t, c, redirector.URL+"/?to="+url.QueryEscape(other.URL+"/"))
		wantBlocked(t, err, "127.0.0.2", "(loopback)")
	})

	t.Run("redirected to localhost", func(t *testing.T) {
		// hooks.test resolves through the fake, localhost through the
		// system resolver.
		c := newClient(t, Config{Allow: []string{"hooks.test"}, Resolver: resolverFunc(func(host string) ([]netip.Addr, error) {
			if host == "hooks.test" {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
		})})
		to := "http://localhost:" + target.port() + "/"
		_, err := get(t, c, "http://hooks.test:"+redirector.port()+"/?to="+url.QueryEscape(to))
		var b *BlockedError
		if !errors.As(err, &b) || b.Host != "localhost" {
			t.Fatalf("err = %v, want refused for host localhost", err)
		}
	})

	if n := target.hits.Load(); n != 0 {
		t.Fatalf("the refused target got %d requests", n)
	}
	if n := redirector.hits.Load(); n == 0 {
		t.Fatal("the allowed redirector was never reached")
	}
}

func TestRedirectRules(t *testing.T) {
	loop := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/ftp":
			http.Redirect(w, r, "ftp://example.com/x", http.StatusFound)
		case "/file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/userinfo":
			http.Redirect(w, r, "http://user:secret@"+r.Host+"/", http.StatusFound)
		case "/twice":
			http.Redirect(w, r, "/once", http.StatusFound)
		case "/once":
			http.Redirect(w, r, "/", http.StatusFound)
		default:
			fmt.Fprint(w, "ok")
		}
	})
	c := newClient(t, Config{AllowPrivate: true, MaxRedirects: 2})

	_, err := get(t, c, loop.URL+"/loop")
	if !errors.Is(err, ErrTooManyRedirects) || !Refused(err) || !strings.Contains(err.Error(), "stopped after 2 redirects") {
		t.Errorf("loop: err = %v", err)
	}
	if resp, err := get(t, c, loop.URL+"/twice"); err != nil || string(resp.Body) != "ok" || resp.URL.Path != "/" {
		t.Errorf("two redirects with MaxRedirects 2: resp %+v, err %v", resp, err)
	}
	for _, p := range []string{"/ftp", "/file"} {
		_, err := get(t, c, loop.URL+p)
		if !errors.Is(err, ErrInvalidURL) || !strings.Contains(err.Error(), "not allowed; only http and https") {
			t.Errorf("%s: err = %v", p, err)
		}
	}
	_, err = get(t, c, loop.URL+"/userinfo")
	if !errors.Is(err, ErrInvalidURL) || !strings.Contains(err.Error(), "user info") || strings.Contains(err.Error(), "secret") {
		t.Errorf("userinfo: err = %v", err)
	}

	// Negative MaxRedirects returns the 3xx itself.
	c = newClient(t, Config{AllowPrivate: true, MaxRedirects: -1})
	resp, err := get(t, c, loop.URL+"/loop")
	if err != nil || resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/loop" {
		t.Errorf("no-follow: resp %+v, err %v", resp, err)
	}
}

func TestResponseCap(t *testing.T) {
	const cap = 1000
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		n := cap
		switch r.URL.Path {
		case "/over":
			n = cap + 1
		case "/huge":
			n = 10 << 20
		}
		w.Write([]byte(strings.Repeat("x", n)))
	})
	c := newClient(t, Config{AllowPrivate: true, MaxResponseBytes: cap})
	do := func(f func(*http.Request) (*Response, error), path string) (*Response, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		return f(req)
	}

	resp, err := do(c.Do, "/exact")
	if err != nil || len(resp.Body) != cap || resp.Truncated {
		t.Fatalf("exactly the cap: len %d, truncated %v, err %v", len(resp.Body), resp.Truncated, err)
	}
	for _, p := range []string{"/over", "/huge"} {
		_, err = do(c.Do, p)
		if !errors.Is(err, ErrResponseTooLarge) || Refused(err) || !strings.Contains(err.Error(), "exceeds 1000 bytes") {
			t.Errorf("Do %s: err = %v", p, err)
		}
		resp, err = do(c.DoTruncated, p)
		if err != nil || !resp.Truncated || len(resp.Body) != cap || resp.StatusCode != 200 {
			t.Errorf("DoTruncated %s: resp %+v, err %v", p, resp, err)
		}
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			w.Write([]byte("start"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	c := newClient(t, Config{AllowPrivate: true, Timeout: 200 * time.Millisecond})
	for _, p := range []string{"/slow-headers", "/slow-body"} {
		start := time.Now()
		_, err := get(t, c, srv.URL+p)
		if err == nil {
			t.Fatalf("%s: no error", p)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: err = %v, want a timeout", p, err)
			}
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: took %s with a 200ms timeout", p, d)
		}
		if Refused(err) {
			t.Errorf("%s: a timeout is not a refusal", p)
		}
	}
}

func TestValidateURLForm(t *testing.T) {
	c := newClient(t, Config{Resolver: fakeResolver{"example.com": {"93.184.215.14"}}})
	for _, tc := range []struct{ url, want string }{
		{"ftp://example.com/", `scheme "ftp" is not allowed`},
		{"javascript:alert(1)", `scheme "javascript" is not allowed`},
		{"example.com/hook", "no scheme"},
		{"//example.com/hook", "no scheme"},
		{"http://user:pw@example.com/", "user info"},
		{"http://example.com@10.0.0.1/", "user info"},
		{"http:///path", "no host"},
		{"http://:80/", "no host"},
		{"http:example.com", "no host"},
		{"http://example.com:0/", `invalid port "0"`},
		{"http://example.com:70000/", `invalid port "70000"`},
		{"http://exa mple.com/", "invalid URL"},
		{"http://[::1/", "invalid URL"},
		{"", "no scheme"},
	} {
		err := c.ValidateURL(context.Background(), tc.url)
		if !errors.Is(err, ErrInvalidURL) || !Refused(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidateURL(%q) = %v, want ErrInvalidURL containing %q", tc.url, err, tc.want)
		}
		if strings.Contains(fmt.Sprint(err), "pw@") {
			t.Errorf("ValidateURL(%q) leaks the password: %v", tc.url, err)
		}
	}
	for _, ok := range []string{"http://example.com", "HTTPS://EXAMPLE.COM:8443/a?b=c#d", "http://93.184.215.14/", "http://[2606:4700::1]:8080/"} {
		if err := c.ValidateURL(context.Background(), ok); err != nil {
			t.Errorf("ValidateURL(%q) = %v", ok, err)
		}
	}
}

func TestConfig(t *testing.T) {
	c := newClient(t, Config{})
	got := c.Config()
	if got.Timeout != DefaultTimeout || got.MaxResponseBytes != DefaultMaxResponseBytes || got.MaxRedirects != DefaultMaxRedirects {
		t.Errorf("defaults: %+v", got)
	}
	tr := c.HTTPClient().Transport.(*http.Transport)
	if tr.Proxy != nil {
		t.Error("the transport uses a proxy, which would bypass the address check")
	}
	if c.HTTPClient().Timeout != DefaultTimeout {
		t.Errorf("http.Client.Timeout = %s", c.HTTPClient().Timeout)
	}

	_, err := New(Config{Timeout: -1, MaxResponseBytes: -1, Allow: []string{"10.0.0.0/8", "10.1.2.3/8", "https://hooks.internal", "ok.internal", "hooks.internal:8080"}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"timeout -1ns is negative",
		"max response bytes -1 is negative",
		`outbound_allow[1] "10.1.2.3/8": has host bits set; did you mean "10.0.0.0/8"?`,
		`outbound_allow[2] "https://hooks.internal": a URL`,
		`outbound_allow[4] "hooks.internal:8080": ports are not supported`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not contain %q", err, want)
		}
	}
	for _, notWant := range []string{"outbound_allow[0]", "outbound_allow[3]"} {
		if strings.Contains(err.Error(), notWant) {
			t.Errorf("error %q blames the good entry %s", err, notWant)
		}
	}
}

func TestDoChecksTheFirstURL(t *testing.T) {
	c := newClient(t, Config{AllowPrivate: true})
	req, _ := http.NewRequest(http.MethodPost, "http://u:p@127.0.0.1:1/", nil)
	if _, err := c.Do(req); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("user info: err = %v", err)
	}
	req, _ = http.NewRequest(http.MethodGet, "file:///etc/passwd", nil)
	if _, err := c.DoTruncated(req); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("file URL: err = %v", err)
	}
	if _, err := c.Do(nil); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("nil request: err = %v", err)
	}
}
