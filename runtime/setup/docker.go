package setup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// dockerReady makes sure a Docker daemon answers the docker command:
// Debian's docker.io installed when dockerd is missing (asking first), the
// daemon started with systemctl where systemd runs (asking first), and, on
// a machine without systemd, the command that starts it printed, or run
// when StartDaemon asks for it. A daemon chosen by DOCKER_HOST or a Docker
// context is only checked: codebridge does not manage another host's
// Docker.
func (s *setup) dockerReady(ctx context.Context) error {
	if v, ok := s.dockerAnswers(ctx); ok {
		s.logf("Docker %s answers", v)
		return nil
	}
	if host := s.Getenv("DOCKER_HOST"); host != "" {
		return fmt.Errorf("Docker does not answer at DOCKER_HOST=%s: start that daemon, or unset DOCKER_HOST to use this machine's", host)
	}
	if c := s.Getenv("DOCKER_CONTEXT"); c != "" && c != "default" {
		return fmt.Errorf("Docker does not answer in the context DOCKER_CONTEXT=%s: start that daemon, or unset DOCKER_CONTEXT", c)
	}
	if err := s.packages(ctx, "dockerd", s.Docker); err != nil {
		return err
	}
	if v, ok := s.dockerAnswers(ctx); ok { // the package's service started it
		s.logf("Docker %s answers", v)
		return nil
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		start := append(asRoot(), "systemctl", "start", "docker")
		s.logf("the Docker daemon does not run; it starts with: %s", strings.Join(start, " "))
		if !s.consent("Start the Docker daemon with systemctl now?") {
			return fmt.Errorf("starting Docker: %w", ErrNeedsConsent)
		}
		cmd := exec.CommandContext(ctx, start[0], start[1:]...)
		cmd.Stdout, cmd.Stderr = s.Out, s.Out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(start, " "), err)
		}
		return s.waitDocker(ctx, "journalctl -u docker")
	}
	logFile := "/var/log/codebridge-dockerd.log"
	if !s.StartDaemon {
		s.logf("the Docker daemon does not run, and this machine has no systemd to start it. Start it yourself, e.g.:")
		s.logf("  sudo sh -c 'dockerd >%s 2>&1 &'", logFile)
		s.logf("or let codebridge setup --engine docker --start-dockerd start it so")
		return errors.New("no Docker daemon answers: start dockerd as shown above, then run codebridge setup --engine docker again")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("starting dockerd needs root: run sudo codebridge setup --engine docker --start-dockerd, or start it yourself: sudo sh -c 'dockerd >%s 2>&1 &'", logFile)
	}
	if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command("dockerd") // it outlives setup, in a session of its own
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting dockerd: %w", err)
	}
	s.logf("started dockerd (pid %d), its log in %s", cmd.Process.Pid, logFile)
	cmd.Process.Release()
	return s.waitDocker(ctx, logFile)
}

// dockerAnswers reports whether a daemon answers the docker command, and
// its version.
func (s *setup) dockerAnswers(ctx context.Context) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, s.Docker, "version", "--format", "{{.Server.Version}}").Output()
	v := strings.TrimSpace(string(out))
	return v, err == nil && v != ""
}

// waitDocker waits up to a minute for a daemon just started to answer.
func (s *setup) waitDocker(ctx context.Context, logs string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		if v, ok := s.dockerAnswers(ctx); ok {
			s.logf("Docker %s answers", v)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Docker daemon did not answer within a minute of its start: see %s", logs)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
