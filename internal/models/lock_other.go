//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package models

import (
	"context"
	"os"
)

// lockFile opens the file at p for reading and writing, creating it. This
// platform has no flock: two pulls sharing a wheel cache may download the
// same wheel at once, and the index's sha256 rejects a mixed result.
func lockFile(_ context.Context, p string, _ func()) (*os.File, error) {
	return os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
}
