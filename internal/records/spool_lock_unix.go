//go:build unix

package records

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, without waiting; it
// lasts until f is closed (or the process ends, a crash included).
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
