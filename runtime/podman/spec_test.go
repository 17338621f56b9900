package podman

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

func TestCreateSpec(t *testing.T) {
	owner := map[string]string{confine.LabelOwner: "host/42"}
	hardening := func(cs *createSpec) {
		cs.Stdin = true
		cs.WorkDir = "/work"
		cs.ReadOnlyFilesystem = true
		cs.NoNewPrivileges = true
		cs.CapDrop = []string{"ALL"}
		cs.NetNS = namespace{NSMode: "none"}
		cs.Init = true
		cs.StopSignal = 9
		cs.StopTimeout = 1
		cs.Remove = true
		cs.Rlimits = []rlimit{{Type: "nofile", Soft: 1024, Hard: 1024}, {Type: "nproc", Soft: 16384, Hard: 16384}}
	}
	tests := []struct {
		name    string
		spec    confine.Spec
		seccomp string
		want    func(*createSpec)
		wantErr string
	}{
		{
			name: "defaults",
			spec: confine.Spec{Image: "img", Command: []string{"python3"}},
			want: func(cs *createSpec) {
				cs.Image, cs.Command = "img", []string{"python3"}
				cs.Env = map[string]string{"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
				cs.Labels = map[string]string{confine.LabelManaged: "true", confine.LabelOwner: "host/42"}
				cs.User = "65534:65534"
				cs.ResourceLimits = resources{Memory: &memoryLimits{Limit: 512 << 20, Swap: 512 << 20}, Pids: &pidsLimit{Limit: 128}}
				cs.Mounts = []mount{
					{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=67108864"}},
					{Destination: "/work", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=67108864"}},
				}
			},
		},
		{
			name: "everything set; labels and env cannot override ours",
			spec: confine.Spec{
				Image: "img", Command: []string{"python3", "-c", "1"},
				Env:    map[string]string{"A": "1", "HOME": "/root"},
				User:   "1000:1000",
				Memory: 64 << 20, CPUs: 1.5, Pids: 32, TmpSize: 1 << 20, WorkSize: 2 << 20,
				Labels: map[string]string{"x": "y", confine.LabelManaged: "false", confine.LabelOwner: "evil/1"},
			},
			seccomp: "/state/seccomp.json",
			want: func(cs *createSpec) {
				cs.Image, cs.Command = "img", []string{"python3", "-c", "1"}
				cs.Env = map[string]string{"A": "1", "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
				cs.Labels = map[string]string{"x": "y", confine.LabelManaged: "true", confine.LabelOwner: "host/42"}
				cs.User = "1000:1000"
				cs.SeccompProfilePath = "/state/seccomp.json"
				cs.ResourceLimits = resources{
					Memory: &memoryLimits{Limit: 64 << 20, Swap: 64 << 20},
					Pids:   &pidsLimit{Limit: 32},
					CPU:    &cpuLimits{Quota: 150000, Period: 100000},
				}
				cs.Mounts = []mount{
					{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=1048576"}},
					{Destination: "/work", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=2097152"}},
				}
			},
		},
		{name: "no image", spec: confine.Spec{Command: []string{"x"}}, wantErr: "no image"},
		{name: "no command", spec: confine.Spec{Image: "img"}, wantErr: "no command"},
		{name: "negative memory", spec: confine.Spec{Image: "img", Command: []string{"x"}, Memory: -1}, wantErr: "invalid limit"},
		{name: "negative cpus", spec: confine.Spec{Image: "img", Command: []string{"x"}, CPUs: -1}, wantErr: "invalid limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newCreateSpec(tt.spec, owner, tt.seccomp)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("createSpec: err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want createSpec
			hardening(&want)
			tt.want(&want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("createSpec (-want +got):\n%s", d)
			}
		})
	}
}

// TestCreateSpecJSON pins the field names Podman's API reads: a typo there is
// silently ignored by the server, so the hardening would quietly be lost.
func TestCreateSpecJSON(t *testing.T) {
	cs, err := newCreateSpec(confine.Spec{Image: "img", Command: []string{"python3"}, CPUs: 0.5}, nil, "/state/seccomp.json")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	// Keys re-marshalled from a map come out sorted.
	for key, want := range map[string]string{
		"read_only_filesystem": "true",
		"no_new_privileges":    "true",
		"cap_drop":             `["ALL"]`,
		"netns":                `{"nsmode":"none"}`,
		"init":                 "true",
		"stdin":                "true",
		"user":                 `"65534:65534"`,
		"work_dir":             `"/work"`,
		"r_limits":             `[{"hard":1024,"soft":1024,"type":"nofile"},{"hard":16384,"soft":16384,"type":"nproc"}]`,
		"seccomp_profile_path": `"/state/seccomp.json"`,
		"resource_limits":      `{"cpu":{"period":100000,"quota":50000},"memory":{"limit":536870912,"swap":536870912},"pids":{"limit":128}}`,
	} {
		got, _ := json.Marshal(m[key])
		if string(got) != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
}
