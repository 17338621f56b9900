//go:build linux

// Command pause is the sandbox ("pause") container of the cluster that
// scripts/kube.sh runs, built as a static binary and imported into its
// containerd as localhost/codebridge-kube-pause:1, since no container registry
// is reachable here to pull the usual one.
//
// As the first process of every pod it holds the pod's namespaces open and does
// nothing else: it waits for SIGINT or SIGTERM and then exits 0, and reaps the
// children it inherits as PID 1 when the pod shares one process namespace.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap waits for every child that has ended, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
