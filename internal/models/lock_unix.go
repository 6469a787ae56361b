//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package models

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile opens the file at p for reading and writing, creating it, and
// takes an exclusive lock on it (flock, released when the file is closed,
// also by the kernel when the process dies, so a crash leaves no stale
// lock). While another process holds it, waiting is called once and the
// lock is retried until ctx is done.
func lockFile(ctx context.Context, p string, waiting func()) (*os.File, error) {
	told := false
	for {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				break
			}
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				f.Close()
				return nil, err
			}
			if !told {
				waiting()
				told = true
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
		// The holder may have renamed or removed the file before letting
		// go: then the lock is on a file no longer at p. Lock p's again.
		a, errA := f.Stat()
		b, errB := os.Stat(p)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return f, nil
		}
		f.Close()
		if errA != nil {
			return nil, errA
		}
	}
}
