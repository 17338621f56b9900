package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/setup"
)

const setupHelp = `Usage: codebridge setup [--engine podman|docker] [--yes] [--image IMAGE] [--from auto|registry|debian] [--base IMAGE] [--rebuild] [--runtime runsc]

Prepares this machine to run codebridge's sandboxes, from the binary alone; each
step is skipped when already done, so it is safe to run again:

  1. Podman: installed with apt-get when missing (runc and catatonit with it),
     after asking; on macOS it prints the Homebrew and podman machine commands.
     With --engine docker, Docker instead: a daemon that answers (DOCKER_HOST,
     the Docker context, or this machine's), else Debian's docker.io installed
     when missing and the daemon started with systemctl, after asking; without
     systemd it prints how to start dockerd, or starts it with --start-dockerd.
  2. The sandbox image, by default localhost/codebridge-sandbox:latest (Python
     with numpy, pandas, matplotlib, scipy, scikit-learn): built from the
     Containerfile inside codebridge where a container registry is reachable,
     else from Debian packages (debootstrap, root only; no registry needed).
     localhost/codebridge-sandbox:minimal is Python alone; any other image is
     pulled.
  3. A probe container. Only when it fails does setup write Podman's defaults
     that make it work on hosts like this (runtime runc, explicit default
     rlimits) into a containers.conf drop-in, after asking.
  4. With --runtime runsc, gVisor: Debian's runsc package when runsc is
     missing; a wrapper script that runs it with the flags the sandbox needs,
     registered with Podman as the runtime runsc (a containers.conf drop-in)
     and, where a Docker daemon answers, with Docker (daemon.json, the flags
     as runtimeArgs; dockerd must then be restarted); then a probe container
     under it. With --engine docker, Docker's registration alone, and the
     probe once the restarted daemon knows runsc. Set MCP_BRIDGE_RUNTIME=runsc
     to use it.

The engine's own output shows the progress. Without a terminal to ask on, a step
that installs packages or writes system files prints the exact command or file
and fails, unless --yes is given.

Flags:
  --engine NAME     podman or docker (default MCP_BRIDGE_ENGINE; auto: Podman
                    where it is installed, else Docker where a daemon's
                    socket or DOCKER_HOST is)
  --start-dockerd   start dockerd when no Docker daemon runs and there is no
                    systemd (root only)
  --yes             answer yes: install and write without asking
  --image IMAGE     the image to prepare (default MCP_BRIDGE_IMAGE, else
                    localhost/codebridge-sandbox:latest)
  --from HOW        how to build codebridge's images: auto (default: the
                    registry, else Debian packages), registry or debian
  --base IMAGE      the image the registry route builds on: a Debian bookworm
                    image with apt, e.g. from your registry mirror (default
                    docker.io/library/debian:bookworm-slim)
  --rebuild         build the image even when it exists
  --debian-mirror URL  the Debian mirror of the Debian route (default: the one
                    in this machine's apt sources, else deb.debian.org)
  --runtime runsc   also install gVisor and register it with the engines
                    (default: runsc when MCP_BRIDGE_RUNTIME=runsc)

Exit status: 0 when the engine runs the sandbox image; 1 when a step failed or
needed a yes it did not get (the message says what to do); 2 when the command
line is wrong.
`

type setupFlags struct {
	image, from, mirror, base, engine, runtime string
	yes, rebuild, startDockerd                 bool
}

// setupCommand defines the flags of setup and returns its run function.
func setupCommand(fs *flag.FlagSet) runFunc {
	f := &setupFlags{}
	fs.StringVar(&f.image, "image", "", "the image to prepare")
	fs.StringVar(&f.from, "from", setup.FromAuto, "auto, registry or debian")
	fs.StringVar(&f.mirror, "debian-mirror", "", "Debian mirror")
	fs.StringVar(&f.base, "base", "", "the registry route's base image")
	fs.StringVar(&f.runtime, "runtime", "", "an OCI runtime to install and register: runsc")
	fs.BoolVar(&f.yes, "yes", false, "answer yes to every question")
	fs.BoolVar(&f.rebuild, "rebuild", false, "build the image even when it exists")
	fs.StringVar(&f.engine, "engine", "", "podman or docker")
	fs.BoolVar(&f.startDockerd, "start-dockerd", false, "start dockerd where no daemon runs and there is no systemd")
	return func(ctx context.Context, c *call) int { return setupCmd(ctx, c.cfg, f, c.stdin, c.stderr) }
}

func setupCmd(ctx context.Context, cfg settings.Config, f *setupFlags, stdin *os.File, stderr io.Writer) int {
	opts := setup.Options{
		Image: f.image, From: f.from, Base: f.base, Rebuild: f.rebuild, Yes: f.yes, Mirror: f.mirror, Out: stderr,
		Runtime: f.runtime, Engine: f.engine, StartDaemon: f.startDockerd,
	}
	if opts.Runtime == "" && cfg.Runtime == setup.GVisor {
		opts.Runtime = cfg.Runtime // MCP_BRIDGE_RUNTIME=runsc: gVisor is wanted
	}
	if opts.Engine == "" {
		opts.Engine, _ = bridge.ChooseEngine(cfg)
	}
	if opts.Image == "" {
		opts.Image = cfg.Image
	}
	if isTerminal(stdin) {
		opts.Ask = setup.AskOn(stdin, stderr)
	}
	err := setup.Run(ctx, opts)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, setup.ErrNeedsConsent):
		fmt.Fprintf(stderr, "codebridge setup: %v\n", err)
	default:
		fmt.Fprintf(stderr, "codebridge setup: %v\nRun codebridge setup again once it is fixed; see the README's set-up section.\n", err)
	}
	return 1
}
