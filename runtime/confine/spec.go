package confine

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"strconv"
)

// Labels put on every sandbox container, by every engine.
const (
	// LabelManaged marks a container as codebridge's.
	LabelManaged = "io.codebridge.managed"
	// LabelOwner names the codebridge process that created a container, as
	// "hostname/pid", so the sweep of an engine ([Owner.Stale]) can tell a
	// dead owner's leftovers from a live instance's containers.
	LabelOwner = "io.codebridge.owner"
	// LabelOwnerStart is the owner's process start time (Linux clock ticks since
	// boot), so a reused pid is not mistaken for the owner.
	LabelOwnerStart = "io.codebridge.owner-start"
)

// Images an engine resolves the sandbox image to when none is configured.
const (
	// DefaultImage is the sandbox image codebridge's set-up builds.
	DefaultImage = "localhost/codebridge-sandbox:latest"
	// FallbackImage is pulled when DefaultImage does not exist.
	FallbackImage = "docker.io/library/python:3.12-slim"
)

// Defaults applied by [Spec.Harden] when a field is zero.
const (
	DefaultUser     = "65534:65534" // nobody:nogroup
	DefaultMemory   = 512 << 20
	DefaultPids     = 128
	DefaultTmpSize  = 64 << 20
	DefaultWorkSize = 64 << 20

	// nprocLimit is RLIMIT_NPROC inside containers. The kernel counts it per
	// user across the whole host, and every sandbox runs as the same uid: it
	// bounds the tasks of all sandboxes together, not of one (the pids limit
	// is the real per-container cap). An idle session holds 5 (catatonit,
	// Python and its reader and two output threads): 4096 stopped every
	// new session at about 820 live ones, each failing to start a thread.
	// 16384 fits 3,000 idle sessions and keeps the sandboxes to half of
	// Linux's default pid_max (32768).
	nprocLimit = 16384
	// nofileLimit is RLIMIT_NOFILE inside containers; it must stay below the
	// host's hard limit or the OCI runtime cannot set it.
	nofileLimit = 1024
	// gvisorHostTasks and gvisorBaseTasks size the cgroup's pids limit
	// under gVisor, about twice what gVisor needs: its own threads (about 50
	// idle, more under load) and, on the ptrace platform, about seven host
	// tasks per process in the sandbox (Debian's runsc 2022-12-19: a peak of
	// 920 for 127 processes). When the cgroup's limit is near that, gVisor
	// itself fails to start a task and the whole sandbox dies with exit
	// code 2 and no output, instead of the code getting EAGAIN (63
	// processes: dead under 350 and 450, EAGAIN under 768).
	gvisorHostTasks = 12
	gvisorBaseTasks = 256
	// cpuPeriod is the CFS period used to express [Spec.CPUs] as a quota.
	cpuPeriod = 100000
)

// Spec describes one sandbox container, whatever the engine. Everything not
// listed here is fixed (see [Hardened]).
type Spec struct {
	Image   string            // required
	Command []string          // argv; required
	Env     map[string]string // added to HOME=/tmp and PYTHONDONTWRITEBYTECODE=1
	User    string            // "uid:gid"; "" means [DefaultUser]
	Memory  int64             // bytes, also the memory+swap limit; 0 means [DefaultMemory]
	CPUs    float64           // CPU quota in cores; 0 means unlimited
	Pids    int64             // pids limit; 0 means [DefaultPids]
	// TmpSize and WorkSize bound the tmpfs mounts on /tmp and /work, in bytes;
	// 0 means [DefaultTmpSize] and [DefaultWorkSize].
	TmpSize  int64
	WorkSize int64
	Labels   map[string]string // extra labels; cannot override the engine's
	// Channel names an environment variable. When it is set and the engine
	// shares this host's files, the container finds in it the path of a
	// unix socket to connect to ([SocketPath]), and its stream is that
	// connection instead of its stdin and stdout (see [Channel]). An
	// engine elsewhere drops it.
	Channel string
	// Runtime is the OCI runtime the container runs under, as the engine
	// names it (e.g. "runsc"); "" means the engine's default. A driver whose
	// engine takes the runtime per container (Docker) asks for it there; one
	// whose engine does not (Podman) connects to a service that runs it.
	// Under gVisor ([GVisor]) the hardening follows gVisor's kernel: see
	// [Hardened.Rlimits] and [SeccompProfile].
	Runtime string
}

// Hardened is a [Spec] with its defaults applied and the hardening every
// engine must give a sandbox container: what a driver translates into its
// own create request, field by field. The fields after Tmpfs are the same
// for every container.
type Hardened struct {
	Image   string
	Command []string
	Env     map[string]string // Spec.Env with HOME and PYTHONDONTWRITEBYTECODE
	Labels  map[string]string // Spec.Labels, the driver's, and LabelManaged=true
	User    string            // "uid:gid"
	Memory  int64             // bytes; also the memory+swap limit: no swap
	// Pids caps the container's tasks on the host (its cgroup). Under
	// gVisor those are gVisor's own threads and, on its ptrace platform,
	// several host tasks per process in the sandbox, so the cap is a
	// backstop well above the sandbox's process limit, which is then
	// RLIMIT_NPROC (see Rlimits).
	Pids int64
	// CPUQuota, in microseconds per CPUPeriod, limits the CPU time; 0 means
	// unlimited.
	CPUQuota  int64
	CPUPeriod uint64
	// Rlimits are nofile and nproc. Linux counts RLIMIT_NPROC per user
	// across the host (every sandbox runs as the same uid), so there it is
	// high and the cgroup's pids limit is the container's cap; gVisor is
	// the container's own kernel and counts it per sandbox, so there it is
	// the container's process cap, [Spec.Pids].
	Rlimits []Rlimit
	Runtime string  // Spec.Runtime
	Tmpfs   []Tmpfs // noexec tmpfs mounts on /tmp and /work

	WorkDir         string   // "/work"
	ReadOnlyRoot    bool     // true
	NoNewPrivileges bool     // true
	CapDrop         []string // ["ALL"]
	NoNetwork       bool     // true: no network namespace but loopback
	Init            bool     // true: an init (catatonit, tini) as pid 1
	StopSignal      int      // 9, SIGKILL: nothing in a sandbox needs a graceful stop
	StopTimeout     uint     // seconds
	// AutoRemove has the engine remove the container once it exits, whether
	// or not the codebridge that created it still runs.
	AutoRemove bool
}

// Rlimit is a POSIX rlimit set in the container. Type is lower-case without
// the RLIMIT_ prefix ("nofile"), as Podman and Docker take it.
type Rlimit struct {
	Type string
	Hard uint64
	Soft uint64
}

// Tmpfs is a size-limited tmpfs mount.
type Tmpfs struct {
	Path string
	Size int64 // bytes
}

// Options are the tmpfs mount options: rw, noexec, nosuid, nodev and the size.
func (t Tmpfs) Options() []string {
	return []string{"rw", "noexec", "nosuid", "nodev", "size=" + strconv.FormatInt(t.Size, 10)}
}

// Harden checks s and returns it with its defaults applied and the fixed
// hardening. The driver's labels (ownership) override s.Labels.
func (s Spec) Harden(driver map[string]string) (Hardened, error) {
	if s.Image == "" {
		return Hardened{}, fmt.Errorf("container spec: no image")
	}
	if len(s.Command) == 0 {
		return Hardened{}, fmt.Errorf("container spec: no command")
	}
	if s.Memory < 0 || s.Pids < 0 || s.CPUs < 0 || s.TmpSize < 0 || s.WorkSize < 0 ||
		math.IsNaN(s.CPUs) || math.IsInf(s.CPUs, 0) {
		return Hardened{}, fmt.Errorf("container spec: negative or invalid limit (memory %d, pids %d, cpus %g)", s.Memory, s.Pids, s.CPUs)
	}

	env := map[string]string{}
	maps.Copy(env, s.Env)
	env["HOME"] = "/tmp"
	env["PYTHONDONTWRITEBYTECODE"] = "1"

	labels := map[string]string{}
	maps.Copy(labels, s.Labels)
	maps.Copy(labels, driver)
	labels[LabelManaged] = "true"

	h := Hardened{
		Image:   s.Image,
		Command: s.Command,
		Env:     env,
		Labels:  labels,
		User:    cmp.Or(s.User, DefaultUser),
		Memory:  cmp.Or(s.Memory, DefaultMemory),
		Pids:    cmp.Or(s.Pids, DefaultPids),
		Rlimits: []Rlimit{
			{Type: "nofile", Soft: nofileLimit, Hard: nofileLimit},
			{Type: "nproc", Soft: nprocLimit, Hard: nprocLimit},
		},
		Tmpfs: []Tmpfs{
			{Path: "/tmp", Size: cmp.Or(s.TmpSize, DefaultTmpSize)},
			{Path: "/work", Size: cmp.Or(s.WorkSize, DefaultWorkSize)},
		},
		WorkDir:         "/work",
		ReadOnlyRoot:    true,
		NoNewPrivileges: true,
		CapDrop:         []string{"ALL"},
		NoNetwork:       true,
		Init:            true,
		Runtime:         s.Runtime,
		StopSignal:      9,
		StopTimeout:     1,
		AutoRemove:      true,
	}
	if GVisor(s.Runtime) {
		h.Rlimits[1] = Rlimit{Type: "nproc", Soft: uint64(h.Pids), Hard: uint64(h.Pids)}
		h.Pids = h.Pids*gvisorHostTasks + gvisorBaseTasks
	}
	if s.CPUs > 0 {
		quota := int64(math.Ceil(s.CPUs * cpuPeriod))
		h.CPUQuota, h.CPUPeriod = max(quota, 1000), cpuPeriod
	}
	return h, nil
}
