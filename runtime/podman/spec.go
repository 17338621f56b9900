package podman

import (
	"fmt"
	"maps"
	"math"
	"strconv"
)

// Labels put on every container this package creates.
const (
	// LabelManaged marks a container as codebridge's.
	LabelManaged = "io.codebridge.managed"
	// LabelOwner names the codebridge process that created a container, as
	// "hostname/pid", so [Client.RemoveStale] can tell a dead owner's leftovers
	// from a live instance's containers.
	LabelOwner = "io.codebridge.owner"
	// LabelOwnerStart is the owner's process start time (Linux clock ticks since
	// boot), so a reused pid is not mistaken for the owner.
	LabelOwnerStart = "io.codebridge.owner-start"
	// labelClient tells the containers of two clients in one process apart.
	labelClient = "io.codebridge.client"
)

// Defaults applied by [Spec] when a field is zero.
const (
	DefaultUser     = "65534:65534" // nobody:nogroup
	DefaultMemory   = 512 << 20
	DefaultPids     = 128
	DefaultTmpSize  = 64 << 20
	DefaultWorkSize = 64 << 20

	// nprocLimit is RLIMIT_NPROC inside containers. The kernel counts it per
	// user across the whole host (every sandbox runs as the same uid), so it
	// is deliberately higher than a single container's pids limit, which is
	// the real per-container cap.
	nprocLimit = 4096
	// nofileLimit is RLIMIT_NOFILE inside containers; it must stay below the
	// host's hard limit or the OCI runtime cannot set it.
	nofileLimit = 1024
	// cpuPeriod is the CFS period used to express [Spec.CPUs] as a quota.
	cpuPeriod = 100000
)

// Spec describes one sandbox container. Everything not listed here is fixed:
// read-only root, no network, all capabilities dropped, no-new-privileges,
// catatonit as init, rlimits, and noexec tmpfs mounts on /tmp and /work.
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
	Labels   map[string]string // extra labels; cannot override this package's
	// SeccompProfile is the path, on the Podman host, of a seccomp profile;
	// "" means Podman's default. [Engine] sets it to its own profile when
	// Podman runs on this host.
	SeccompProfile string
	// Channel names an environment variable. When it is set and Podman
	// shares this host's files, the container finds in it the path of a unix
	// socket to connect to, and [Box.Stream] is that connection instead of
	// the container's stdin and stdout (see channel.go). [Engine] drops it
	// for a Podman elsewhere.
	Channel string

	channelDir string // where Start makes the socket's folder; set by Engine
}

// createSpec is the subset of libpod's SpecGenerator (pkg/specgen) we send to
// POST /libpod/containers/create. Field names follow its JSON tags.
type createSpec struct {
	Image              string            `json:"image"`
	Command            []string          `json:"command"`
	Env                map[string]string `json:"env,omitempty"`
	Labels             map[string]string `json:"labels,omitempty"`
	Stdin              bool              `json:"stdin"`
	Terminal           bool              `json:"terminal"`
	User               string            `json:"user"`
	WorkDir            string            `json:"work_dir"`
	ReadOnlyFilesystem bool              `json:"read_only_filesystem"`
	NoNewPrivileges    bool              `json:"no_new_privileges"`
	CapDrop            []string          `json:"cap_drop"`
	NetNS              namespace         `json:"netns"`
	Init               bool              `json:"init"`
	StopSignal         int               `json:"stop_signal"`
	StopTimeout        uint              `json:"stop_timeout"`
	ResourceLimits     resources         `json:"resource_limits"`
	Rlimits            []rlimit          `json:"r_limits"`
	Mounts             []mount           `json:"mounts"`
	SeccompProfilePath string            `json:"seccomp_profile_path,omitempty"`
	// Remove has the engine remove the container once it exits (conmon's
	// exit command runs 'podman container cleanup --rm'), whether or not
	// the codebridge that created it still runs.
	Remove bool `json:"remove"`
}

type namespace struct {
	NSMode string `json:"nsmode"`
}

// resources is the OCI runtime-spec LinuxResources subset we set.
type resources struct {
	Memory *memoryLimits `json:"memory,omitempty"`
	Pids   *pidsLimit    `json:"pids,omitempty"`
	CPU    *cpuLimits    `json:"cpu,omitempty"`
}

type memoryLimits struct {
	Limit int64 `json:"limit"`
	Swap  int64 `json:"swap"` // memory+swap; equal to Limit means no swap
}

type pidsLimit struct {
	Limit int64 `json:"limit"`
}

type cpuLimits struct {
	Quota  int64  `json:"quota"`
	Period uint64 `json:"period"`
}

// rlimit is an OCI POSIXRlimit. Podman wants the type lower-case without the
// RLIMIT_ prefix ("nofile"); "RLIMIT_NOFILE" becomes RLIMIT_RLIMIT_NOFILE.
type rlimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type mount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options"`
}

// createSpec turns s into the libpod create request, with the fixed hardening
// and the given ownership labels.
func (s Spec) createSpec(owner map[string]string) (createSpec, error) {
	if s.Image == "" {
		return createSpec{}, fmt.Errorf("container spec: no image")
	}
	if len(s.Command) == 0 {
		return createSpec{}, fmt.Errorf("container spec: no command")
	}
	if s.Memory < 0 || s.Pids < 0 || s.CPUs < 0 || s.TmpSize < 0 || s.WorkSize < 0 ||
		math.IsNaN(s.CPUs) || math.IsInf(s.CPUs, 0) {
		return createSpec{}, fmt.Errorf("container spec: negative or invalid limit (memory %d, pids %d, cpus %g)", s.Memory, s.Pids, s.CPUs)
	}
	user := cmpOr(s.User, DefaultUser)
	mem := cmpOr(s.Memory, DefaultMemory)
	pids := cmpOr(s.Pids, DefaultPids)

	env := map[string]string{}
	maps.Copy(env, s.Env)
	env["HOME"] = "/tmp"
	env["PYTHONDONTWRITEBYTECODE"] = "1"

	labels := map[string]string{}
	maps.Copy(labels, s.Labels)
	maps.Copy(labels, owner)
	labels[LabelManaged] = "true"

	cs := createSpec{
		Image:              s.Image,
		Command:            s.Command,
		Env:                env,
		Labels:             labels,
		Stdin:              true,
		User:               user,
		WorkDir:            "/work",
		ReadOnlyFilesystem: true,
		NoNewPrivileges:    true,
		CapDrop:            []string{"ALL"},
		NetNS:              namespace{NSMode: "none"},
		Init:               true,
		StopSignal:         9, // SIGKILL: nothing in a sandbox needs a graceful stop
		StopTimeout:        1,
		ResourceLimits: resources{
			Memory: &memoryLimits{Limit: mem, Swap: mem},
			Pids:   &pidsLimit{Limit: pids},
		},
		Rlimits: []rlimit{
			{Type: "nofile", Soft: nofileLimit, Hard: nofileLimit},
			{Type: "nproc", Soft: nprocLimit, Hard: nprocLimit},
		},
		Mounts: []mount{
			tmpfs("/tmp", cmpOr(s.TmpSize, DefaultTmpSize)),
			tmpfs("/work", cmpOr(s.WorkSize, DefaultWorkSize)),
		},
		SeccompProfilePath: s.SeccompProfile,
		Remove:             true,
	}
	if s.CPUs > 0 {
		quota := int64(math.Ceil(s.CPUs * cpuPeriod))
		cs.ResourceLimits.CPU = &cpuLimits{Quota: max(quota, 1000), Period: cpuPeriod}
	}
	return cs, nil
}

func tmpfs(dst string, size int64) mount {
	return mount{
		Destination: dst,
		Type:        "tmpfs",
		Source:      "tmpfs",
		Options:     []string{"rw", "noexec", "nosuid", "nodev", "size=" + strconv.FormatInt(size, 10)},
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
