package kube

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// The parts of the Kubernetes API objects codebridge writes and reads.

type objectMeta struct {
	Name              string            `json:"name,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []ownerReference  `json:"ownerReferences,omitempty"`
	CreationTimestamp string            `json:"creationTimestamp,omitempty"`
	DeletionTimestamp string            `json:"deletionTimestamp,omitempty"`
}

type ownerReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
}

// Pod is a pod as codebridge writes and reads it.
type Pod struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   objectMeta `json:"metadata"`
	Spec       podSpec    `json:"spec"`
	Status     podStatus  `json:"status,omitzero"`
}

type podSpec struct {
	Containers                    []podContainer `json:"containers"`
	RestartPolicy                 string         `json:"restartPolicy,omitempty"`
	TerminationGracePeriodSeconds *int64         `json:"terminationGracePeriodSeconds,omitempty"`
	AutomountServiceAccountToken  *bool          `json:"automountServiceAccountToken,omitempty"`
	EnableServiceLinks            *bool          `json:"enableServiceLinks,omitempty"`
	ShareProcessNamespace         *bool          `json:"shareProcessNamespace,omitempty"`
	RuntimeClassName              string         `json:"runtimeClassName,omitempty"`
	DNSPolicy                     string         `json:"dnsPolicy,omitempty"`
	SecurityContext               *podSecurity   `json:"securityContext,omitempty"`
	Volumes                       []volume       `json:"volumes,omitempty"`
}

type podSecurity struct {
	RunAsNonRoot   *bool           `json:"runAsNonRoot,omitempty"`
	RunAsUser      *int64          `json:"runAsUser,omitempty"`
	RunAsGroup     *int64          `json:"runAsGroup,omitempty"`
	SeccompProfile *seccompProfile `json:"seccompProfile,omitempty"`
}

type seccompProfile struct {
	Type             string `json:"type"` // RuntimeDefault or Localhost
	LocalhostProfile string `json:"localhostProfile,omitempty"`
}

type podContainer struct {
	Name                     string             `json:"name"`
	Image                    string             `json:"image"`
	ImagePullPolicy          string             `json:"imagePullPolicy,omitempty"`
	Command                  []string           `json:"command"`
	Env                      []envVar           `json:"env,omitempty"`
	WorkingDir               string             `json:"workingDir,omitempty"`
	Stdin                    bool               `json:"stdin,omitempty"`
	StdinOnce                bool               `json:"stdinOnce,omitempty"`
	Resources                resources          `json:"resources"`
	SecurityContext          *containerSecurity `json:"securityContext,omitempty"`
	VolumeMounts             []volumeMount      `json:"volumeMounts,omitempty"`
	TerminationMessagePolicy string             `json:"terminationMessagePolicy,omitempty"`
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type resources struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

type containerSecurity struct {
	AllowPrivilegeEscalation *bool        `json:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool        `json:"readOnlyRootFilesystem"`
	RunAsNonRoot             *bool        `json:"runAsNonRoot,omitempty"`
	Capabilities             capabilities `json:"capabilities"`
}

type capabilities struct {
	Drop []string `json:"drop"`
}

type volume struct {
	Name     string    `json:"name"`
	EmptyDir *emptyDir `json:"emptyDir,omitempty"`
}

type emptyDir struct {
	Medium    string `json:"medium,omitempty"`
	SizeLimit string `json:"sizeLimit,omitempty"`
}

type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
}

type podStatus struct {
	Phase             string            `json:"phase,omitempty"` // Pending, Running, Succeeded, Failed
	Reason            string            `json:"reason,omitempty"`
	Message           string            `json:"message,omitempty"`
	ContainerStatuses []containerStatus `json:"containerStatuses,omitempty"`
	Conditions        []struct {
		Type    string `json:"type"`
		Status  string `json:"status"`
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message,omitempty"`
	} `json:"conditions,omitempty"`
}

type containerStatus struct {
	Name  string         `json:"name"`
	State containerState `json:"state"`
}

type containerState struct {
	Waiting *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"waiting,omitempty"`
	Running *struct {
		StartedAt string `json:"startedAt"`
	} `json:"running,omitempty"`
	Terminated *terminated `json:"terminated,omitempty"`
}

type terminated struct {
	ExitCode int    `json:"exitCode"`
	Reason   string `json:"reason"` // OOMKilled, Error, Completed, ...
	Message  string `json:"message"`
}

// sandbox is the status of the pod's one container, if the kubelet reported it.
func (p *Pod) sandbox() *containerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == containerName {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// containerName is the name of a sandbox pod's one container.
const containerName = "sandbox"

// Labels and annotations of codebridge's pods, besides runtime/confine's.
const (
	// LabelReplica names the codebridge replica (an [Engine]) that created a
	// pod, or that serves it now: the selector of its own pods.
	LabelReplica = "io.codebridge.replica"
	// annotationServe marks a pod whose process serves its stream on a
	// socket inside the pod, reached through a relay ([Serve]).
	annotationServe = "io.codebridge.serve"
)

// podOptions are what a pod gets besides its [confine.Hardened] spec.
type podOptions struct {
	Name         string
	Namespace    string
	Replica      string // LabelReplica's value
	RuntimeClass string // runtimeClassName; "" the cluster's default
	PullPolicy   string // imagePullPolicy; "" IfNotPresent
	// Seccomp is a Localhost profile's path relative to the kubelet's
	// seccomp folder; "" is RuntimeDefault.
	Seccomp string
	// Wrap is the shell line that runs before the command: rlimits, and in
	// attach mode the wait for the engine to attach.
	Wrap string
	// Serve, when set, is the variable and its value that make the process
	// serve its stream on a socket ([Serve.Env]).
	Serve  *envVar
	Owners []ownerReference
}

// validLabel matches a label value Kubernetes accepts.
var validLabel = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)

// newPod is the pod of a hardened spec: everything runtime/confine asks of
// a sandbox that Kubernetes can express, field by field (see
// docs/kubernetes.md for what it cannot: noexec on the emptyDirs and a pids
// limit of the pod's own).
func newPod(h confine.Hardened, o podOptions) (*Pod, error) {
	uid, gid, err := parseUser(h.User)
	if err != nil {
		return nil, err
	}
	if uid == 0 {
		return nil, fmt.Errorf("container spec: user %s is root, which a sandbox pod may not be", h.User)
	}
	env := make([]envVar, 0, len(h.Env)+1)
	for _, k := range slices.Sorted(maps.Keys(h.Env)) {
		env = append(env, envVar{k, h.Env[k]})
	}
	if o.Serve != nil {
		env = append(env, *o.Serve)
	}
	limits := map[string]string{
		"memory":            strconv.FormatInt(h.Memory, 10),
		"ephemeral-storage": strconv.FormatInt(ephemeralStorage, 10),
	}
	requests := map[string]string{
		"memory":            strconv.FormatInt(h.Memory, 10),
		"cpu":               cpuRequest,
		"ephemeral-storage": strconv.FormatInt(ephemeralStorage, 10),
	}
	if h.CPUQuota > 0 {
		milli := (h.CPUQuota*1000 + int64(h.CPUPeriod) - 1) / int64(h.CPUPeriod)
		limits["cpu"] = strconv.FormatInt(milli, 10) + "m"
		if milli < 100 {
			requests["cpu"] = limits["cpu"]
		}
	}
	var (
		vols   []volume
		mounts []volumeMount
	)
	for _, t := range h.Tmpfs {
		name := strings.Trim(strings.ReplaceAll(t.Path, "/", "-"), "-")
		vols = append(vols, volume{Name: name, EmptyDir: &emptyDir{Medium: "Memory", SizeLimit: strconv.FormatInt(t.Size, 10)}})
		mounts = append(mounts, volumeMount{Name: name, MountPath: t.Path})
	}
	labels := map[string]string{}
	annotations := map[string]string{}
	for k, v := range h.Labels {
		annotations[k] = v // any string; labels only take short simple values
		if validLabel.MatchString(v) {
			labels[k] = v
		}
	}
	labels[LabelReplica] = o.Replica
	if o.Serve != nil {
		annotations[annotationServe] = "true"
	}
	seccomp := &seccompProfile{Type: "RuntimeDefault"}
	if o.Seccomp != "" {
		seccomp = &seccompProfile{Type: "Localhost", LocalhostProfile: o.Seccomp}
	}
	command := h.Command
	if o.Wrap != "" {
		command = append([]string{"/bin/sh", "-c", o.Wrap, h.Command[0]}, h.Command[1:]...)
	}
	grace := int64(h.StopTimeout)
	return &Pod{
		APIVersion: "v1",
		Kind:       "Pod",
		Metadata: objectMeta{
			Name:            o.Name,
			Namespace:       o.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: o.Owners,
		},
		Spec: podSpec{
			RestartPolicy:                 "Never",
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			// The pause container becomes pid 1, the init that reaps
			// what the code's processes leave ([confine.Hardened.Init]).
			ShareProcessNamespace: ptr(h.Init),
			RuntimeClassName:      o.RuntimeClass,
			// No network: the node's resolver settings, and no warning
			// event per pod where the cluster has no DNS.
			DNSPolicy: "Default",
			SecurityContext: &podSecurity{
				RunAsNonRoot:   ptr(true),
				RunAsUser:      ptr(uid),
				RunAsGroup:     ptr(gid),
				SeccompProfile: seccomp,
			},
			Volumes: vols,
			Containers: []podContainer{{
				Name:            containerName,
				Image:           h.Image,
				ImagePullPolicy: cmp.Or(o.PullPolicy, "IfNotPresent"),
				Command:         command,
				Env:             env,
				WorkingDir:      h.WorkDir,
				Stdin:           o.Serve == nil,
				StdinOnce:       o.Serve == nil,
				Resources:       resources{Limits: limits, Requests: requests},
				SecurityContext: &containerSecurity{
					AllowPrivilegeEscalation: ptr(!h.NoNewPrivileges),
					ReadOnlyRootFilesystem:   ptr(h.ReadOnlyRoot),
					Capabilities:             capabilities{Drop: h.CapDrop},
				},
				VolumeMounts:             mounts,
				TerminationMessagePolicy: "FallbackToLogsOnError",
			}},
		},
	}, nil
}

// Resources a sandbox pod asks for besides its memory: the scheduler
// reserves cpuRequest of a core for it (sandboxes idle between runs; the
// limit, when set, caps a run), and ephemeralStorage bounds what it may
// write outside its memory-backed volumes (its logs: the root is
// read-only).
const (
	cpuRequest       = "50m"
	ephemeralStorage = 64 << 20
)

// wrapLine is the shell line a sandbox's command runs under: the rlimits of
// the hardened spec (a pod spec has no field for them; lowering them needs
// no privilege), then the command. With attach, it first reads one line
// from stdin, which the engine sends once attached, so no output is written
// before anyone reads it, and it stays the command's parent.
func wrapLine(h confine.Hardened, attach bool) string {
	var b strings.Builder
	for _, r := range h.Rlimits {
		flag, ok := map[string]string{"nofile": "-n", "nproc": "-p"}[r.Type]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "ulimit -S %s %d && ulimit -H %s %d && ", flag, r.Soft, flag, r.Hard)
	}
	if attach {
		// The shell stays, holding the container's stdout and stderr: the
		// kubelet ends an attach once the container has closed them, and
		// the sandbox's runner replaces its own stderr with a pipe.
		b.WriteString(`IFS= read -r _ && "$0" "$@"`)
		return b.String()
	}
	b.WriteString(`exec "$0" "$@"`)
	return b.String()
}

// parseUser parses "uid:gid" (gid defaults to uid).
func parseUser(s string) (uid, gid int64, err error) {
	u, g, ok := strings.Cut(s, ":")
	uid, err = strconv.ParseInt(u, 10, 64)
	if err != nil || uid < 0 {
		return 0, 0, fmt.Errorf("container spec: user %q is not uid:gid", s)
	}
	gid = uid
	if ok {
		if gid, err = strconv.ParseInt(g, 10, 64); err != nil || gid < 0 {
			return 0, 0, fmt.Errorf("container spec: user %q is not uid:gid", s)
		}
	}
	return uid, gid, nil
}

func ptr[T any](v T) *T { return &v }

// networkPolicyName is the NetworkPolicy that denies codebridge's pods all
// traffic, one per namespace.
const networkPolicyName = "codebridge-sandbox-deny-all"

// networkPolicy denies every pod with [confine.LabelManaged] all ingress and
// egress: a policy that selects pods and lists no rule allows nothing.
func networkPolicy(namespace string) map[string]any {
	return map[string]any{
		"apiVersion": "networking.k8s.io/v1",
		"kind":       "NetworkPolicy",
		"metadata": map[string]any{
			"name":      networkPolicyName,
			"namespace": namespace,
			"labels":    map[string]string{confine.LabelManaged: "true"},
		},
		"spec": map[string]any{
			"podSelector": map[string]any{"matchLabels": map[string]string{confine.LabelManaged: "true"}},
			"policyTypes": []string{"Ingress", "Egress"},
		},
	}
}
