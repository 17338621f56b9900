//go:build linux

// Command netfwd makes a TCP address of this machine's loopback reachable
// from inside a network namespace: it listens on ADDR in the namespace at
// NETNS and forwards each connection to ADDR outside it.
//
//	netfwd NETNS ADDR
//
// scripts/agent-sandbox.sh runs agent-sandbox's controller in a network
// namespace of its own, because its webhook server listens on every
// interface with no flag for the address; the controller reaches the
// cluster's API server (127.0.0.1:16443) through this. It runs until killed.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: netfwd NETNS ADDR (e.g. /run/netns/x 127.0.0.1:16443)")
		os.Exit(2)
	}
	l, err := listenIn(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "netfwd:", err)
		os.Exit(1)
	}
	for {
		in, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "netfwd:", err)
			os.Exit(1)
		}
		go forward(in, os.Args[2])
	}
}

// listenIn listens on addr in the network namespace at path: a socket keeps
// the namespace it was made in, so the thread enters it only to listen.
func listenIn(path, addr string) (net.Listener, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, err
	}
	defer self.Close()
	target, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("entering %s: %w", path, err)
	}
	l, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		panic(fmt.Sprintf("netfwd: cannot return to its own network namespace: %v", err)) // the thread is unusable
	}
	return l, lerr
}

func forward(in net.Conn, addr string) {
	defer in.Close()
	out, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "netfwd:", err)
		return
	}
	defer out.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(out, in)
		out.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	io.Copy(in, out)
	in.(*net.TCPConn).CloseWrite()
	<-done
}
