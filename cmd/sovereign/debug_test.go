package main

import (
	"log/slog"
	"strings"
	"testing"
)

// TestDebugAddrIsLoopbackOnly: the profiles need no key, so they are
// served on a loopback address only.
func TestDebugAddrIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":6060", "10.1.2.3:6060", "localhost:6060", "nonsense"} {
		if err := serveDebug(addr, slog.Default()); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: %v, want a refusal", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		if err := serveDebug(addr, slog.Default()); err != nil && !strings.Contains(err.Error(), "cannot assign") {
			t.Errorf("%s: %v", addr, err)
		}
	}
}
