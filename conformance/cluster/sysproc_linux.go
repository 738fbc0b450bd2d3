package cluster

import "syscall"

// sysProcAttr puts a child in its own process group (so signals reach it
// and nothing else) and has the kernel kill it if the harness dies first,
// so that no broker outlives the test that started it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
