//go:build !unix

package records

import "os"

// lockFile does nothing where flock(2) is missing: one server per data
// directory is then the operator's to ensure.
func lockFile(*os.File) error { return nil }
