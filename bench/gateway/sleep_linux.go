package main

import (
	"runtime"
	"syscall"
	"time"
)

// prSetTimerSlack is prctl(2)'s PR_SET_TIMERSLACK.
const prSetTimerSlack = 29

// lockDispatcher pins the calling goroutine to its OS thread and sets that
// thread's timer slack to 1 ns, so sleepUntil wakes within tens of
// microseconds (the default slack is 50 µs, and time.Sleep rounds short
// sleeps up to a millisecond while the process is otherwise idle, which at
// thousands of requests a second would bunch them into ticks). The
// returned function undoes the pinning.
func lockDispatcher() func() {
	runtime.LockOSThread()
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	return runtime.UnlockOSThread
}

// sleepUntil blocks the calling thread in nanosleep(2) until t.
func sleepUntil(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
