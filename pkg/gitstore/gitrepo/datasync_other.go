//go:build !linux

package gitrepo

import "os"

// datasync is fsync where fdatasync(2) is missing (os.File.Sync is
// F_FULLFSYNC on macOS).
func datasync(f *os.File) error { return f.Sync() }
