//go:build !linux

package pool

import "os/exec"

// setProcAttr does nothing outside Linux: there is no portable way to have a
// child die with its parent. Close stops every server it started.
func setProcAttr(cmd *exec.Cmd) {}

// killGroup does nothing outside Linux; the pool kills the server process itself.
func killGroup(pid int) {}
