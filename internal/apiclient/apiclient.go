// Package apiclient is the HTTP client the sovereign CLI uses to talk to a
// running server: JSON in and out, errors as the server's OpenAI envelope
// with a hint of what to do next.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Client calls a Sovereign server's API.
type Client struct {
	// Base is the server's address: scheme://host[:port], without a
	// trailing slash.
	Base string
	key  string
	http *http.Client
}

// New returns a client of the server at base, authenticating with key.
func New(base, key string) *Client {
	return &Client{Base: strings.TrimRight(base, "/"), key: key, http: &http.Client{Timeout: 15 * time.Minute}}
}

// Error is an error answer of the server: its status and envelope, and
// a hint for the person at the terminal.
type Error struct {
	Status  int
	Code    string
	Message string
	Param   string
	Hint    string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("the server answered %d", e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Hint != "" {
		msg += "\n" + e.Hint
	}
	return msg
}

// Do sends method path with body (JSON, or none when nil) and decodes a
// 2xx answer into out (when non-nil); any other answer is an *Error.
// It returns the raw answer.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("bad server URL %q: %v", c.Base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("cannot reach the Sovereign server at %s: %v\nIs `sovereign serve` running there? Set SOVEREIGN_URL or --url to its address", c.Base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s %s: %v", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return data, c.errorOf(resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return data, fmt.Errorf("the answer of %s %s is not what this client expects (%v); is %s a Sovereign server?", method, path, err, c.Base)
		}
	}
	return data, nil
}

func (c *Client) errorOf(status int, body []byte) error {
	var env apierr.Envelope
	e := &Error{Status: status}
	if json.Unmarshal(body, &env) == nil && env.Error.Message != "" {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		if env.Error.Param != nil {
			e.Param = *env.Error.Param
		}
	} else {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 300 {
			e.Message = e.Message[:300] + "…"
		}
	}
	switch status {
	case http.StatusUnauthorized:
		e.Hint = "Set SOVEREIGN_API_KEY (or --api-key) to an API key of this server."
	case http.StatusForbidden:
		e.Hint = "Use a key with the scope named above (`sovereign keys create --scopes models:read,models:write,inference` makes one)."
	}
	return e
}
