package extract

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child killed when the server that started it
// dies, even by SIGKILL (its budget would end it later anyway).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// limitSelf caps the process's address space at memory bytes and its CPU
// time at cpu seconds (the kernel sends SIGXCPU, which ends it); zero
// leaves a limit as it is.
func limitSelf(memory, cpu int64) error {
	if memory > 0 {
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: uint64(memory), Max: uint64(memory)}); err != nil {
			return err
		}
	}
	if cpu > 0 {
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: uint64(cpu), Max: uint64(cpu) + 1}); err != nil {
			return err
		}
	}
	return nil
}
