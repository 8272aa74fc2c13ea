//go:build !linux

package framework

import "syscall"

// sysProcAttr: only Linux can tie a child's life to its parent's; elsewhere
// a crashed test can leave a cluster's processes running.
func sysProcAttr() *syscall.SysProcAttr { return nil }
