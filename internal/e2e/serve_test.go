package e2e

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// selfSigned writes a certificate for 127.0.0.1 and returns the cert and
// key paths and a pool trusting it.
func selfSigned(t *testing.T) (string, string, *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sovereign-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	kb, _ := x509.MarshalECPrivateKey(priv)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	pool := x509.NewCertPool()
	cert, _ := x509.ParseCertificate(der)
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeOverTLSAndGracefulShutdown runs the real `sovereign serve`
// binary: HTTPS with the configured certificate, the bootstrap key from the
// environment, and a SIGTERM in the middle of a stream that still finishes.
func TestServeOverTLSAndGracefulShutdown(t *testing.T) {
	store := tinyStore(t, "tiny")
	certPath, keyPath, pool := selfSigned(t)
	addr := freeAddr(t)
	key := "sk-sov-" + strings.Repeat("A1b2C3d4", 5)
	cmd := exec.Command(testutil.Binary(t), "serve")
	cmd.Env = append(os.Environ(),
		"SOVEREIGN_ADDR="+addr, "SOVEREIGN_DATA_DIR="+t.TempDir(), "SOVEREIGN_MODELS_DIR="+store.Dir(),
		"SOVEREIGN_TLS_CERT="+certPath, "SOVEREIGN_TLS_KEY="+keyPath, "SOVEREIGN_BOOTSTRAP_KEY="+key,
		"SOVEREIGN_THREADS=2", "SOVEREIGN_CTX=512", "SOVEREIGN_SHUTDOWN_TIMEOUT=180s")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never answered over TLS: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Plain HTTP on the TLS port does not work.
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP answered on the TLS port")
	}
	// End-of-turn banned, so the stream runs its full 120 tokens.
	body, _ := json.Marshal(map[string]any{"model": "tiny", "stream": true, "max_tokens": 120, "temperature": 1,
		"logit_bias": map[string]int{strconv.Itoa(testmodel.EOSID): -100, strconv.Itoa(testmodel.EndOfTextID): -100},
		"messages":   []map[string]string{{"role": "user", "content": "a long story"}}})
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// SIGTERM mid-stream: the stream still completes with [DONE].
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(rd)
	if err != nil {
		t.Fatalf("stream cut by shutdown: %v", err)
	}
	if !strings.Contains(string(rest), `"finish_reason":"length"`) || !strings.HasSuffix(strings.TrimSpace(string(rest)), "data: [DONE]") {
		t.Fatalf("stream did not finish during graceful shutdown; tail: %q", tail(string(rest), 300))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server exited with %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not exit after SIGTERM")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestServeRefusesPlainHTTPOffLoopback checks the safety default.
func TestServeRefusesPlainHTTPOffLoopback(t *testing.T) {
	cmd := exec.Command(testutil.Binary(t), "serve")
	cmd.Env = append(os.Environ(), "SOVEREIGN_ADDR=0.0.0.0:0", "SOVEREIGN_DATA_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing plain HTTP") {
		t.Fatalf("serve on 0.0.0.0 without TLS: err %v, output %s", err, out)
	}
}
