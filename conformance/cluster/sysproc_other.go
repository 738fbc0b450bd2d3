//go:build unix && !linux

package cluster

import "syscall"

// sysProcAttr puts a child in its own process group. Outside Linux there is
// no parent-death signal: Stop must run for the children to end.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
