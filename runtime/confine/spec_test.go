package confine

import (
	"slices"
	"strings"
	"testing"
)

func TestGVisorStartHint(t *testing.T) {
	const failed = "starting container: setting up network: creating interfaces from net namespace \"/proc/9/ns/net\": cannot run with network enabled in root network namespace"
	if h := GVisorStartHint("runsc", failed); !strings.Contains(h, "--network=none --oci-seccomp --host-uds=open") || !strings.Contains(h, "codebridge setup --runtime runsc") {
		t.Errorf("hint %q", h)
	}
	if h := GVisorStartHint("runc", failed); h != "" {
		t.Errorf("runc: hint %q", h)
	}
	if h := GVisorStartHint("runsc", "no such image"); h != "" {
		t.Errorf("another failure: hint %q", h)
	}
}

func TestGVisor(t *testing.T) {
	for _, tt := range []struct {
		runtime string
		want    bool
	}{
		{"", false}, {"runc", false}, {"crun", false}, {"/usr/bin/crun", false},
		{"runsc", true}, {"/usr/bin/runsc", true}, {"/usr/local/lib/codebridge/runsc", true},
		{"runsc-kvm", true}, {"gvisor", true}, {"my-gVisor", true}, {"runscx", false},
	} {
		if got := GVisor(tt.runtime); got != tt.want {
			t.Errorf("GVisor(%q) = %v, want %v", tt.runtime, got, tt.want)
		}
	}
}

// TestHardenRuntime: under gVisor the process limit moves from the cgroup to
// RLIMIT_NPROC, which gVisor counts per sandbox, and the cgroup keeps a
// backstop for gVisor's host tasks; elsewhere nothing changes.
func TestHardenRuntime(t *testing.T) {
	spec := Spec{Image: "img", Command: []string{"python3"}, Pids: 64}
	nproc := func(h Hardened) uint64 {
		i := slices.IndexFunc(h.Rlimits, func(r Rlimit) bool { return r.Type == "nproc" })
		if i < 0 || h.Rlimits[i].Soft != h.Rlimits[i].Hard {
			t.Fatalf("rlimits %+v: want one nproc, soft = hard", h.Rlimits)
		}
		return h.Rlimits[i].Hard
	}
	for _, runtime := range []string{"", "runc"} {
		spec.Runtime = runtime
		h, err := spec.Harden(nil)
		if err != nil {
			t.Fatal(err)
		}
		if h.Pids != 64 || nproc(h) != nprocLimit || h.Runtime != runtime {
			t.Errorf("runtime %q: pids %d, nproc %d, runtime %q; want 64, %d, %q", runtime, h.Pids, nproc(h), h.Runtime, nprocLimit, runtime)
		}
	}
	spec.Runtime = "runsc"
	h, err := spec.Harden(nil)
	if err != nil {
		t.Fatal(err)
	}
	if nproc(h) != 64 || h.Pids != 64*gvisorHostTasks+gvisorBaseTasks || h.Runtime != "runsc" {
		t.Errorf("runsc: pids %d, nproc %d, runtime %q; want %d, 64, runsc", h.Pids, nproc(h), h.Runtime, 64*gvisorHostTasks+gvisorBaseTasks)
	}
	// The spec's default applies before the move.
	spec.Pids = 0
	if h, _ = spec.Harden(nil); nproc(h) != DefaultPids {
		t.Errorf("runsc, default pids: nproc %d, want %d", nproc(h), DefaultPids)
	}
}
