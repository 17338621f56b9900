package docker

import (
	"sort"
	"strconv"
	"strings"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// createRequest is the subset of the Engine API's container create body
// (POST /containers/create) we send. Field names follow the API.
type createRequest struct {
	Image        string
	Cmd          []string
	Env          []string          `json:",omitempty"`
	Labels       map[string]string `json:",omitempty"`
	User         string
	WorkingDir   string
	AttachStdin  bool
	AttachStdout bool
	AttachStderr bool
	OpenStdin    bool
	// StdinOnce closes the container's stdin when the attached client
	// closes its end, so the process reads the end of its input.
	StdinOnce       bool
	Tty             bool
	NetworkDisabled bool
	StopSignal      string
	StopTimeout     *int `json:",omitempty"`
	HostConfig      hostConfig
}

type hostConfig struct {
	ReadonlyRootfs bool
	NetworkMode    string
	CapDrop        []string
	// SecurityOpt carries no-new-privileges and the seccomp profile, inline
	// ("seccomp=<JSON>"): the daemon reads it from the request, wherever it
	// runs.
	SecurityOpt []string
	Memory      int64
	MemorySwap  int64 // memory+swap; equal to Memory means no swap
	PidsLimit   int64
	CPUQuota    int64 `json:"CpuQuota,omitempty"`
	CPUPeriod   int64 `json:"CpuPeriod,omitempty"`
	Ulimits     []ulimit
	Tmpfs       map[string]string
	Init        bool
	AutoRemove  bool
	Runtime     string  `json:",omitempty"` // the OCI runtime; "" is the daemon's default
	Mounts      []mount `json:",omitempty"`
}

type ulimit struct {
	Name string
	Soft int64
	Hard int64
}

type mount struct {
	Type     string
	Source   string
	Target   string
	ReadOnly bool
}

// newCreateRequest turns s into the create request, with the hardening
// every engine applies ([confine.Hardened]), the given ownership labels, the
// sandbox's seccomp profile for its OCI runtime and that runtime
// ([confine.Spec.Runtime]: a name the daemon knows; "" is its default).
func newCreateRequest(s confine.Spec, owner map[string]string) (createRequest, error) {
	h, err := s.Harden(owner)
	if err != nil {
		return createRequest{}, err
	}
	env := make([]string, 0, len(h.Env))
	for k, v := range h.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	stopTimeout := int(h.StopTimeout)
	security := []string{"seccomp=" + string(confine.SeccompProfile(h.Runtime))}
	if h.NoNewPrivileges {
		security = append(security, "no-new-privileges")
	}
	network := "bridge"
	if h.NoNetwork {
		network = "none"
	}
	cr := createRequest{
		Image:           h.Image,
		Cmd:             h.Command,
		Env:             env,
		Labels:          h.Labels,
		User:            h.User,
		WorkingDir:      h.WorkDir,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       true,
		NetworkDisabled: h.NoNetwork,
		StopSignal:      strconv.Itoa(h.StopSignal),
		StopTimeout:     &stopTimeout,
		HostConfig: hostConfig{
			ReadonlyRootfs: h.ReadOnlyRoot,
			NetworkMode:    network,
			CapDrop:        h.CapDrop,
			SecurityOpt:    security,
			Memory:         h.Memory,
			MemorySwap:     h.Memory,
			PidsLimit:      h.Pids,
			CPUQuota:       h.CPUQuota,
			CPUPeriod:      int64(h.CPUPeriod),
			Tmpfs:          map[string]string{},
			Init:           h.Init,
			AutoRemove:     h.AutoRemove,
			Runtime:        h.Runtime,
		},
	}
	for _, r := range h.Rlimits {
		cr.HostConfig.Ulimits = append(cr.HostConfig.Ulimits, ulimit{Name: r.Type, Soft: int64(r.Soft), Hard: int64(r.Hard)})
	}
	// The runtime gives a tmpfs the mode of the folder it covers, and
	// Docker makes the working folder (root's, 0755) when the image lacks
	// it: the tmpfs mounts belong to the sandbox's user, who must write
	// there.
	uid, gid, _ := strings.Cut(h.User, ":")
	for _, t := range h.Tmpfs {
		cr.HostConfig.Tmpfs[t.Path] = strings.Join(append(t.Options(), "uid="+uid, "gid="+gid), ",")
	}
	return cr, nil
}

// AddChannel gives the container its socket's folder, bind-mounted
// read-only, and names the socket in the environment variable env
// ([enginekit.CreateRequest]). (Docker's bind mounts take no noexec: the
// folder holds one socket, removed once the container has connected.)
func (cr *createRequest) AddChannel(env string, ch *confine.Channel) {
	cr.Env = append(cr.Env, env+"="+confine.SocketPath)
	cr.HostConfig.Mounts = append(cr.HostConfig.Mounts, mount{Type: "bind", Source: ch.Dir(), Target: confine.MountDir, ReadOnly: true})
}
