//go:build !linux

package extract

import "os/exec"

// dieWithParent is Linux only; elsewhere the budget ends an orphan.
func dieWithParent(*exec.Cmd) {}

// limitSelf sets no limits where rlimits are not available: the parent's
// wall-time budget still ends the child.
func limitSelf(memory, cpu int64) error { return nil }
