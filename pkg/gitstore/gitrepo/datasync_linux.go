package gitrepo

import (
	"os"
	"syscall"
)

// datasync flushes f's data, and only the metadata needed to read it back
// (fdatasync(2)): for a file overwritten in place, no journal commit.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := rc.Control(func(fd uintptr) {
		for {
			err = syscall.Fdatasync(int(fd))
			if err != syscall.EINTR {
				return
			}
		}
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}
