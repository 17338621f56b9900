// Package setup prepares a machine to run codebridge's sandboxes, from the
// binary alone, on Podman or Docker: it installs the engine (and what the
// image build needs) when missing, makes sure Docker's daemon answers,
// builds or pulls the sandbox image, and fixes Podman's runtime and rlimit
// defaults only where a probe container shows they do not work; on request
// it installs gVisor and registers it with the engines. It drives the
// podman or docker command as a person would, so what the engine prints is
// the progress a person sees; it asks before installing packages, starting
// a daemon or writing system files, and prints the exact fix when it may
// not.
package setup

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"

	"github.com/codebridge-mcp/codebridge/configs"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// Images codebridge knows how to build, and their variants.
const (
	DataImage    = confine.DefaultImage
	MinimalImage = "localhost/codebridge-sandbox:minimal"
)

// Ways to build one of codebridge's images.
const (
	FromAuto     = "auto"     // the registry, else Debian packages
	FromRegistry = "registry" // podman build from the embedded Containerfile
	FromDebian   = "debian"   // debootstrap, then podman import; no registry
)

// Options configure [Run]. Zero values mean the defaults.
type Options struct {
	// Image is the sandbox image to prepare: DataImage (the default) or
	// MinimalImage are built; any other is pulled.
	Image string
	// From is how to build DataImage or MinimalImage: FromAuto (default),
	// FromRegistry or FromDebian.
	From string
	// Rebuild builds the image even when it exists.
	Rebuild bool
	// Yes answers yes to every question.
	Yes bool
	// Ask asks a person a yes/no question; nil means there is no one to ask,
	// so a step that needs consent prints its fix and fails.
	Ask func(question string) bool
	// Out receives progress and the output of the commands run.
	Out io.Writer
	// Mirror is the Debian mirror of FromDebian; "" means the one this
	// machine's apt sources name, else deb.debian.org.
	Mirror string
	// Base is the image FromRegistry builds on, a Debian bookworm image with
	// apt (e.g. from a registry mirror); "" means DefaultBase.
	Base string
	// Runtime is an OCI runtime to install and register with the engine,
	// under which the sandbox is then probed: "" for none, or runsc
	// (gVisor), the one setup knows.
	Runtime string
	// Engine is the container engine to prepare: EnginePodman (the
	// default) or EngineDocker.
	Engine string
	// Podman is the podman command; "" means podman from PATH.
	Podman string
	// Docker is the docker command; "" means docker from PATH.
	Docker string
	// StartDaemon starts a Docker daemon (dockerd) when none answers on a
	// machine without systemd, instead of saying how.
	StartDaemon bool
	// Getenv reads the environment; nil means os.Getenv. Tests replace it.
	Getenv func(string) string
}

// Engines [Run] prepares.
const (
	EnginePodman = "podman"
	EngineDocker = "docker"
)

// ErrNeedsConsent is returned, wrapped, when a step needed a yes that was not
// given; the message before it says what to run or write by hand.
var ErrNeedsConsent = errors.New("not done without your consent: run codebridge setup in a terminal to be asked, pass --yes, or do it yourself as shown above")

// Run prepares the machine. Each step is skipped when already done, so it is
// safe to run again.
func Run(ctx context.Context, opts Options) error {
	s := &setup{Options: opts}
	if s.Image == "" {
		s.Image = DataImage
	}
	if s.From == "" {
		s.From = FromAuto
	}
	if s.Out == nil {
		s.Out = io.Discard
	}
	if s.Podman == "" {
		s.Podman = "podman"
	}
	if s.Docker == "" {
		s.Docker = "docker"
	}
	switch s.Engine {
	case "", EnginePodman:
		s.Engine, s.cli, s.name = EnginePodman, s.Podman, "Podman"
	case EngineDocker:
		s.cli, s.name = s.Docker, "Docker"
	default:
		return fmt.Errorf("--engine %q: want podman or docker", s.Engine)
	}
	if s.Getenv == nil {
		s.Getenv = os.Getenv
	}
	switch s.From {
	case FromAuto, FromRegistry, FromDebian:
	default:
		return fmt.Errorf("--from %q: want auto, registry or debian", s.From)
	}
	if err := knownRuntime(s.Runtime); err != nil {
		return err
	}
	if s.Base != "" && s.From == FromDebian {
		return fmt.Errorf("--base %s is the base of the registry route; --from debian builds from Debian packages (drop one of them)", s.Base)
	}
	if s.Base == "" {
		s.Base = DefaultBase
	}
	if s.Engine == EngineDocker {
		if err := s.dockerReady(ctx); err != nil {
			return err
		}
	} else if err := s.packages(ctx, "podman"); err != nil {
		return err
	}
	if err := s.image(ctx); err != nil {
		return err
	}
	if err := s.runtime(ctx, s.Image, "python3", "-c", `print("ok")`); err != nil {
		return err
	}
	if s.Runtime == GVisor {
		if err := s.gvisor(ctx); err != nil {
			return err
		}
		s.logf("ready: %s runs the sandbox image %s, under gVisor with MCP_BRIDGE_RUNTIME=runsc", s.name, s.Image)
		return nil
	}
	s.logf("ready: %s runs the sandbox image %s", s.name, s.Image)
	return nil
}

type setup struct {
	Options
	cli    string // the engine's command
	name   string // the engine as people call it
	probed bool   // the runtime probe passed once
}

func (s *setup) logf(format string, args ...any) {
	fmt.Fprintf(s.Out, "setup: "+format+"\n", args...)
}

// consent asks question, or answers yes for --yes.
func (s *setup) consent(question string) bool {
	if s.Yes {
		return true
	}
	if s.Ask == nil {
		return false
	}
	return s.Ask(question)
}

// packages installs the commands that are missing (each named by its Debian
// package), asking first.
func (s *setup) packages(ctx context.Context, cmds ...string) error {
	var missing []string
	for _, c := range cmds {
		if c == "podman" && s.Podman != "podman" {
			c = s.Podman
		}
		pkg := cmp.Or(debianPackage[filepath.Base(c)], filepath.Base(c))
		if _, err := exec.LookPath(c); err != nil && !slices.Contains(missing, pkg) {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if slices.Contains(missing, "podman") && goruntime.GOOS == "linux" {
		// What Podman needs beside it on Debian-like systems, when absent.
		for _, extra := range []string{"runc", "catatonit"} {
			if _, err := exec.LookPath(extra); err != nil && !slices.Contains(missing, extra) {
				missing = append(missing, extra)
			}
		}
	}
	switch {
	case goruntime.GOOS == "darwin" && slices.Contains(missing, "docker.io"):
		s.logf("missing: Docker. Install Docker Desktop (https://docs.docker.com/desktop/), start it, and run codebridge setup --engine docker again")
		return errors.New("docker not installed")
	case goruntime.GOOS == "darwin":
		s.logf("missing: %s. Install Podman with Homebrew, then start its virtual machine:", strings.Join(missing, ", "))
		s.logf("  brew install podman && podman machine init && podman machine start")
		return fmt.Errorf("%s not installed", strings.Join(missing, ", "))
	case !haveCommand("apt-get"):
		s.logf("missing: %s. Install them with your system's package manager (codebridge setup knows apt-get only), then run codebridge setup again", strings.Join(missing, ", "))
		return fmt.Errorf("%s not installed", strings.Join(missing, ", "))
	}
	sudo := asRoot()
	update := append(sudo, "apt-get", "update", "-qq")
	install := append(append(sudo[:len(sudo):len(sudo)], "apt-get", "install", "-y", "-qq"), missing...)
	s.logf("missing: %s. They install with:", strings.Join(missing, ", "))
	s.logf("  %s && %s", strings.Join(update, " "), strings.Join(install, " "))
	if !s.consent(fmt.Sprintf("Install %s with apt-get now?", strings.Join(missing, ", "))) {
		return fmt.Errorf("installing %s: %w", strings.Join(missing, ", "), ErrNeedsConsent)
	}
	for _, argv := range [][]string{update, install} {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = s.Out, s.Out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
	}
	s.logf("installed %s", strings.Join(missing, ", "))
	return nil
}

// image makes sure the sandbox image exists: built when it is one of
// codebridge's, pulled otherwise.
func (s *setup) image(ctx context.Context) error {
	variant, ours := Variant(s.Image)
	if s.imageExists(ctx, s.Image) && !s.Rebuild {
		if !ours {
			s.logf("image %s is present", s.Image)
			return nil
		}
		labels, _ := s.output(ctx, "image", "inspect", "--format",
			`{{index .Config.Labels "io.codebridge.sandbox.variant"}} {{index .Config.Labels "`+configs.InputsLabel+`"}}`, s.Image)
		label, inputs, _ := strings.Cut(strings.TrimSpace(labels), " ")
		switch {
		case label != variant:
			s.logf("image %s exists but is not the %s variant (it is %q): building it", s.Image, variant, label)
		case inputs != configs.Inputs(variant):
			s.logf("image %s was built from other image files than this codebridge's (inputs %q, now %s): building it again", s.Image, inputs, configs.Inputs(variant))
		default:
			s.logf("image %s is present (--rebuild builds it again)", s.Image)
			return nil
		}
	}
	if !ours {
		s.logf("pulling %s", s.Image)
		return s.pull(ctx, s.Image)
	}
	switch s.From {
	case FromRegistry:
		return s.buildRegistry(ctx, variant)
	case FromDebian:
		return s.buildDebian(ctx, variant)
	}
	err := s.buildRegistry(ctx, variant)
	if err == nil || goruntime.GOOS != "linux" || !errors.Is(err, errNoRegistry) {
		return err
	}
	s.logf("no registry reachable: building from Debian packages instead")
	return s.buildDebian(ctx, variant)
}

// Variant is the variant of one of codebridge's images, and whether image is
// one of them.
func Variant(image string) (variant string, ours bool) {
	switch image {
	case DataImage:
		return "data", true
	case MinimalImage:
		return "minimal", true
	}
	return "", false
}

// errNoRegistry wraps the failure to pull the registry build's base image.
var errNoRegistry = errors.New("no container registry")

// DefaultBase is the image the registry route builds on.
const DefaultBase = "docker.io/library/debian:bookworm-slim"

// buildRegistry builds the image with podman build from the embedded
// Containerfile. Podman must be able to run the build's containers, so the
// runtime is probed with the base image first.
func (s *setup) buildRegistry(ctx context.Context, variant string) error {
	s.logf("pulling the base image %s", s.Base)
	if err := s.pull(ctx, s.Base); err != nil {
		return fmt.Errorf("%w: %v", errNoRegistry, err)
	}
	if err := s.runtime(ctx, s.Base, "sh", "-c", "echo ok"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "codebridge-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeContext(dir); err != nil {
		return err
	}
	s.logf("building %s (%s variant) from the embedded Containerfile: a few minutes for data", s.Image, variant)
	args := []string{"build", "--pull=never"}
	if s.Engine == EngineDocker {
		args = []string{"build"} // it uses the local base image unless told --pull
	}
	return s.run(ctx, nil, append(args, "--build-arg", "BASE="+s.Base, "--build-arg", "VARIANT="+variant,
		"--build-arg", "INPUTS="+configs.Inputs(variant), "-t", s.Image, "-f", filepath.Join(dir, "Containerfile"), dir)...)
}

// pull pulls ref. An image on a loopback registry is pulled without TLS, as
// Docker does by default: nothing else can listen there.
func (s *setup) pull(ctx context.Context, ref string) error {
	args := []string{"pull"}
	if confine.LoopbackRegistry(ref) && s.Engine == EnginePodman { // Docker allows loopback registries without TLS
		args = append(args, "--tls-verify=false")
	}
	return s.run(ctx, nil, append(args, ref)...)
}

// runtime probes that Podman can start a container from image running argv,
// which must print ok. When it cannot, it writes Podman's defaults that make
// it work on hosts like these (runc instead of crun, explicit default
// rlimits), asking first, and probes again.
func (s *setup) runtime(ctx context.Context, image string, argv ...string) error {
	if s.probed {
		return nil
	}
	out, err := s.probe(ctx, image, argv...)
	if err == nil {
		s.logf("%s runs containers", s.Engine)
		s.probed = true
		return nil
	}
	s.logf("%s could not start a probe container: %s", s.Engine, out)
	if s.Engine == EngineDocker {
		return fmt.Errorf("docker cannot start containers: %s: check that '%s run --rm %s python3 -c \"print(1)\"' works", out, s.cli, image)
	}
	if host := s.Getenv("CONTAINER_HOST"); host != "" {
		s.logf("Podman runs at CONTAINER_HOST=%s, so fix it there: on that host, put this in %s and run codebridge setup again:\n%s", host, defaultConfPath(), confFix)
		return fmt.Errorf("podman cannot start containers: %s", out)
	}
	path := s.confPath()
	if old, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(old)) > 0 && !bytes.HasPrefix(old, []byte(confHeader)) {
		s.logf("%s exists and was not written by codebridge, so it is left alone. Add these settings to it, then run codebridge setup again:\n%s", path, confFix)
		return fmt.Errorf("podman cannot start containers: %s", out)
	}
	s.logf("the usual fix is %s with:\n%s", path, confFix)
	if !s.consent(fmt.Sprintf("Write %s?", path)) {
		return fmt.Errorf("writing %s: %w", path, ErrNeedsConsent)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("%w: write the file above yourself (as root for /etc)", err)
	}
	if err := os.WriteFile(path, []byte(confHeader+confFix), 0o644); err != nil {
		return fmt.Errorf("%w: write the file above yourself (as root for /etc)", err)
	}
	s.logf("wrote %s", path)
	if out, err := s.probe(ctx, image, argv...); err != nil {
		return fmt.Errorf("podman still cannot start a container after writing %s: %s", path, out)
	}
	s.logf("podman runs containers")
	s.probed = true
	return nil
}

const (
	confHeader = "# Written by codebridge setup because a probe container failed.\n"
	confFix    = "[engine]\nruntime = \"runc\"\n[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n"
)

// confPath is the containers.conf file Podman reads the fix from: the one
// CONTAINERS_CONF names (Podman then reads no other), else a drop-in file,
// system-wide for root and the user's own otherwise.
func (s *setup) confPath() string {
	if p := s.Getenv("CONTAINERS_CONF"); p != "" {
		return p
	}
	return s.dropIn("50-codebridge.conf")
}

func defaultConfPath() string { return filepath.Join(systemDropIns, "50-codebridge.conf") }

// systemDropIns is the folder of containers.conf drop-ins for every user.
const systemDropIns = "/etc/containers/containers.conf.d"

// dropIn is the containers.conf drop-in file called name: system-wide for
// root, the user's own otherwise.
func (s *setup) dropIn(name string) string {
	if os.Geteuid() == 0 {
		return filepath.Join(systemDropIns, name)
	}
	return filepath.Join(s.configHome(), "containers", "containers.conf.d", name)
}

// configHome is the user's configuration folder: $XDG_CONFIG_HOME, else
// ~/.config.
func (s *setup) configHome() string {
	if dir := s.Getenv("XDG_CONFIG_HOME"); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config")
}

// probe runs argv in a container of image with the sandbox's network mode.
func (s *setup) probe(ctx context.Context, image string, argv ...string) (string, error) {
	out, err := s.output(ctx, append([]string{"run", "--rm", "--network", "none", image}, argv...)...)
	if err == nil && out != "ok" {
		err = fmt.Errorf("printed %q instead of ok", out)
	}
	if err != nil && out == "" {
		out = err.Error()
	}
	return out, err
}

// run runs the engine's command with its output on s.Out.
func (s *setup) run(ctx context.Context, stdin io.Reader, args ...string) error {
	cmd := exec.CommandContext(ctx, s.cli, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, s.Out, s.Out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", s.Engine, args[0], err)
	}
	return nil
}

// output runs the engine's command and returns its trimmed output, stdout
// and stderr together.
func (s *setup) output(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, s.cli, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// imageExists reports whether the engine has image.
func (s *setup) imageExists(ctx context.Context, image string) bool {
	args := []string{"image", "exists", image}
	if s.Engine == EngineDocker {
		args = []string{"image", "inspect", "--format", "{{.Id}}", image}
	}
	return exec.CommandContext(ctx, s.cli, args...).Run() == nil
}

// debianPackage names the Debian package of a command, where it differs.
var debianPackage = map[string]string{"dockerd": "docker.io", "docker": "docker.io"}

// asRoot is the prefix that runs a command as root: none for root, else sudo.
func asRoot() []string {
	if os.Geteuid() == 0 {
		return nil
	}
	return []string{"sudo"}
}

func haveCommand(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// AskOn returns an Ask that reads y/N answers from in, writing questions to
// out.
func AskOn(in io.Reader, out io.Writer) func(string) bool {
	r := bufio.NewReader(in)
	return func(q string) bool {
		fmt.Fprintf(out, "setup: %s [y/N] ", q)
		line, _ := r.ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true
		}
		return false
	}
}
