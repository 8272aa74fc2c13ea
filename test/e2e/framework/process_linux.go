package framework

import "syscall"

// sysProcAttr has the kernel kill a cluster's processes when the test process
// dies without stopping them (a panic, a -timeout, kill -9), so they never
// outlive it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
