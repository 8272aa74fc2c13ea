package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDataDir takes the data directory for this process before anything
// else is opened in it: a second heaven-server on the same directory
// would otherwise wait, silently, on the embedded etcd's lock. The kernel
// releases the lock when the process dies, however it dies.
func lockDataDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "heaven-server.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another heaven-server (pid %s): stop it, or give this one another --data-dir",
				dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
