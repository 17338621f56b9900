package podman

import (
	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// labelClient tells the containers of two clients in one process apart.
const labelClient = "io.codebridge.client"

// placement is what a container started through a client finds on the
// Podman host, put there by codebridge: the seccomp profile
// ([confine.SeccompProfile]) at path seccomp, "" meaning Podman's default,
// and its socket's folder made in channelDir, "" meaning none (the stream
// is stdin and stdout). [Engine] fills it in.
type placement struct {
	seccomp    string
	channelDir string
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

// newCreateSpec turns s into the libpod create request, with the hardening
// every engine applies ([confine.Hardened]), the given ownership labels and
// the seccomp profile at path seccomp on the Podman host.
func newCreateSpec(s confine.Spec, owner map[string]string, seccomp string) (createSpec, error) {
	h, err := s.Harden(owner)
	if err != nil {
		return createSpec{}, err
	}
	cs := createSpec{
		Image:              h.Image,
		Command:            h.Command,
		Env:                h.Env,
		Labels:             h.Labels,
		Stdin:              true,
		User:               h.User,
		WorkDir:            h.WorkDir,
		ReadOnlyFilesystem: h.ReadOnlyRoot,
		NoNewPrivileges:    h.NoNewPrivileges,
		CapDrop:            h.CapDrop,
		NetNS:              namespace{NSMode: "none"}, // h.NoNetwork
		Init:               h.Init,
		StopSignal:         h.StopSignal,
		StopTimeout:        h.StopTimeout,
		ResourceLimits: resources{
			Memory: &memoryLimits{Limit: h.Memory, Swap: h.Memory},
			Pids:   &pidsLimit{Limit: h.Pids},
		},
		SeccompProfilePath: seccomp,
		Remove:             h.AutoRemove,
	}
	for _, r := range h.Rlimits {
		cs.Rlimits = append(cs.Rlimits, rlimit{Type: r.Type, Soft: r.Soft, Hard: r.Hard})
	}
	for _, t := range h.Tmpfs {
		cs.Mounts = append(cs.Mounts, mount{Destination: t.Path, Type: "tmpfs", Source: "tmpfs", Options: t.Options()})
	}
	if h.CPUQuota > 0 {
		cs.ResourceLimits.CPU = &cpuLimits{Quota: h.CPUQuota, Period: h.CPUPeriod}
	}
	return cs, nil
}
