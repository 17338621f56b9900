package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// dialSSH connects to the Docker daemon of an ssh:// host as the docker
// CLI does: ssh runs 'docker system dial-stdio' there, whose stdin and
// stdout are the connection. It needs ssh, with a key or agent that logs in
// without a prompt, and the docker CLI on that host.
func dialSSH(ctx context.Context, host string) (net.Conn, error) {
	u, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	ssh, err := exec.LookPath("ssh")
	if err != nil {
		return nil, fmt.Errorf("%s needs the ssh command: %w", host, err)
	}
	args := []string{"-o", "BatchMode=yes"}
	if u.User != nil {
		args = append(args, "-l", u.User.Username())
	}
	if p := u.Port(); p != "" {
		args = append(args, "-p", p)
	}
	args = append(args, "--", u.Hostname(), "docker", "system", "dial-stdio")
	cmd := exec.Command(ssh, args...) // outlives ctx, which bounds only the dial
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &confine.CapBuffer{Max: 4 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &cmdConn{cmd: cmd, in: in, out: out, stderr: stderr, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// cmdConn is a connection made of a process's stdin and stdout.
type cmdConn struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     io.ReadCloser
	stderr  *confine.CapBuffer
	exited  chan struct{}
	waitErr error

	once sync.Once
}

func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.out.Read(p)
	if errors.Is(err, io.EOF) && n == 0 {
		<-c.exited
		if c.waitErr != nil {
			return 0, fmt.Errorf("ssh: %v: %s", c.waitErr, c.stderr.String())
		}
	}
	return n, err
}

func (c *cmdConn) Write(p []byte) (int, error) { return c.in.Write(p) }

// CloseWrite closes the process's stdin: the daemon reads the end of the
// stream.
func (c *cmdConn) CloseWrite() error { return c.in.Close() }

func (c *cmdConn) Close() error {
	c.once.Do(func() {
		c.in.Close()
		c.out.Close()
		c.cmd.Process.Kill()
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr                { return sshAddr{} }
func (c *cmdConn) RemoteAddr() net.Addr               { return sshAddr{} }
func (c *cmdConn) SetDeadline(t time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(t time.Time) error { return nil }

type sshAddr struct{}

func (sshAddr) Network() string { return "ssh" }
func (sshAddr) String() string  { return "docker system dial-stdio" }
