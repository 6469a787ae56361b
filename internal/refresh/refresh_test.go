package refresh

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestEveryReloadsUntilStopped(t *testing.T) {
	var n atomic.Int32
	l := Every(5*time.Millisecond, "test", nil, func(context.Context) error {
		if n.Add(1) == 2 {
			return errors.New("a failure is retried")
		}
		return nil
	})
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	l.Stop()
	l.Stop()
	stopped := n.Load()
	if stopped < 4 {
		t.Fatalf("%d reloads", stopped)
	}
	time.Sleep(30 * time.Millisecond)
	if n.Load() != stopped {
		t.Fatal("reloads went on after Stop")
	}
}
