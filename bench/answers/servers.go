package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// server is a child process listening on a loopback port.
type server struct {
	name string
	cmd  *exec.Cmd
	url  string
	log  string
	done chan struct{}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs the command with its output in logPath, and waits until
// GET url+readyPath answers 200.
func start(ctx context.Context, name string, port int, logPath, readyPath string, env []string, timeout time.Duration, argv ...string) (*server, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	s := &server{name: name, cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(s.done) }()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited before it was ready:\n%s", name, tail(logPath, 30))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		default:
		}
		if resp, err := http.Get(s.url + readyPath); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s not ready after %s:\n%s", name, timeout, tail(logPath, 30))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// stop sends SIGTERM to the server's process group, then SIGKILL after
// ten seconds.
func (s *server) stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	pgid := -s.cmd.Process.Pid
	syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(pgid, syscall.SIGKILL)
		<-s.done
	}
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func randomKey() string {
	b := make([]byte, 20)
	rand.Read(b)
	return "sk-sov-bench-" + hex.EncodeToString(b)
}

// startSovereign starts `sovereign serve` on a fresh SQLite data dir with
// a bootstrap admin key, the given models, threads, slots and context.
func startSovereign(ctx context.Context, c *config, dataDir, key string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	var env []string
	for _, kv := range os.Environ() {
		// A database, TLS, config file or Redis from the caller's shell
		// would change what is measured.
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SOVEREIGN_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		fmt.Sprintf("SOVEREIGN_ADDR=127.0.0.1:%d", port),
		"SOVEREIGN_DATA_DIR="+dataDir,
		"SOVEREIGN_MODELS_DIR="+c.modelsDir,
		"SOVEREIGN_BOOTSTRAP_KEY="+key,
		fmt.Sprintf("SOVEREIGN_THREADS=%d", c.threads),
		fmt.Sprintf("SOVEREIGN_SLOTS=%d", c.slots),
		fmt.Sprintf("SOVEREIGN_CTX=%d", c.ctx),
		"SOVEREIGN_LOG_LEVEL=warn",
	)
	return start(ctx, "sovereign", port, filepath.Join(c.out, "answers-sovereign.log"), "/healthz", env, c.readyTimeout, c.bin, "serve")
}

// startLlamaServer starts the baseline: llama-server with the same GGUF,
// threads, slots and context per slot, its Jinja chat template, greedy.
func startLlamaServer(ctx context.Context, c *config) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	argv := []string{c.llamaServer, "-m", c.gguf, "-t", fmt.Sprint(c.threads), "-tb", fmt.Sprint(c.threads),
		"-np", fmt.Sprint(c.slots), "-c", fmt.Sprint(c.slots * c.ctx), "--jinja", "--temp", "0",
		"--host", "127.0.0.1", "--port", fmt.Sprint(port), "-a", c.model}
	return start(ctx, "llama-server", port, filepath.Join(c.out, "answers-llama-server.log"), "/health", os.Environ(), c.readyTimeout, argv...)
}

// client calls a server's JSON API.
type client struct {
	base, key string
	http      *http.Client
}

// apiError is a non-2xx answer.
type apiError struct {
	Status int
	Body   string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body) }

func (c *client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &apiError{Status: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decoding %q: %w", method, path, truncate(string(b), 300), err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// resolveGGUF finds the model's weights in the models dir: <dir>/<id>/
// model.gguf, or the model whose manifest lists id among its aliases.
func resolveGGUF(modelsDir, id string) (string, error) {
	p := filepath.Join(modelsDir, id, "model.gguf")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	dirs, _ := os.ReadDir(modelsDir)
	for _, d := range dirs {
		var m struct {
			ID      string   `json:"id"`
			Aliases []string `json:"aliases"`
		}
		if readJSON(filepath.Join(modelsDir, d.Name(), "manifest.json"), &m) != nil {
			continue
		}
		for _, a := range m.Aliases {
			if a == id {
				p := filepath.Join(modelsDir, d.Name(), "model.gguf")
				if _, err := os.Stat(p); err != nil {
					return "", err
				}
				return p, nil
			}
		}
	}
	return "", errors.New("no model " + id + " (nor a model with that alias) in " + modelsDir + ": pass -gguf (BENCH_GGUF)")
}
