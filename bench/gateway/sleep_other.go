//go:build !linux

package main

import "time"

// lockDispatcher is a no-op off Linux, where sleepUntil falls back on
// time.Sleep (coarser: a late dispatch counts as latency for every target).
func lockDispatcher() func() { return func() {} }

func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}
