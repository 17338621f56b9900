package confine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSeccompProfileContents checks the embedded profile's shape, so that an
// edit cannot quietly turn a refusal into an allowance; and that the
// profile under gVisor is the same without the clone3 rule.
func TestSeccompProfileContents(t *testing.T) {
	for _, runtime := range []string{"", "runc", "runsc", "/usr/local/lib/codebridge/runsc"} {
		t.Run(runtime, func(t *testing.T) { checkProfile(t, SeccompProfile(runtime), GVisor(runtime)) })
	}
	if SeccompID("") == SeccompID("runsc") || SeccompID("") != SeccompID("runc") {
		t.Errorf("profile IDs: %q for the kernel's, %q for gVisor's, %q for runc's", SeccompID(""), SeccompID("runsc"), SeccompID("runc"))
	}
}

func checkProfile(t *testing.T, profile []byte, gvisor bool) {
	var p struct {
		DefaultAction string   `json:"defaultAction"`
		Architectures []string `json:"architectures"`
		Syscalls      []struct {
			Names    []string `json:"names"`
			Action   string   `json:"action"`
			ErrnoRet *int     `json:"errnoRet"`
			Args     []struct {
				Index    int    `json:"index"`
				Value    uint64 `json:"value"`
				ValueTwo uint64 `json:"valueTwo"`
				Op       string `json:"op"`
			} `json:"args"`
		} `json:"syscalls"`
	}
	dec := json.NewDecoder(bytes.NewReader(profile))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("seccomp.json: %v", err)
	}
	if p.DefaultAction != "SCMP_ACT_ALLOW" {
		t.Errorf("defaultAction %q", p.DefaultAction)
	}
	for _, arch := range []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"} {
		if !slices.Contains(p.Architectures, arch) {
			t.Errorf("architecture %s missing", arch)
		}
	}
	const eperm, enosys = 1, 38
	denied := map[string]int{} // unconditional refusals: name -> errno
	var cloneFlags []uint64    // flags whose presence refuses clone
	for _, r := range p.Syscalls {
		if r.Action != "SCMP_ACT_ERRNO" || r.ErrnoRet == nil {
			t.Errorf("rule %v: action %s, errnoRet %v; want SCMP_ACT_ERRNO with an errno", r.Names, r.Action, r.ErrnoRet)
			continue
		}
		if len(r.Args) == 0 {
			for _, n := range r.Names {
				denied[n] = *r.ErrnoRet
			}
			continue
		}
		a := r.Args[0]
		if !slices.Equal(r.Names, []string{"clone"}) || len(r.Args) != 1 || a.Index != 0 ||
			a.Op != "SCMP_CMP_MASKED_EQ" || a.Value != a.ValueTwo || *r.ErrnoRet != eperm {
			t.Errorf("unexpected conditional rule %+v", r)
			continue
		}
		cloneFlags = append(cloneFlags, a.Value)
	}
	for _, n := range []string{
		"unshare", "setns",
		"mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
		"keyctl", "add_key", "request_key",
		"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
		"ptrace", "process_vm_readv", "process_vm_writev",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"name_to_handle_at", "open_by_handle_at",
	} {
		if denied[n] != eperm {
			t.Errorf("%s: errno %d, want EPERM", n, denied[n])
		}
	}
	switch clone3, ok := denied["clone3"]; {
	case gvisor && ok:
		t.Errorf("clone3 refused under gVisor (errno %d): gVisor answers EPERM for it, and threads do not start", clone3)
	case !gvisor && clone3 != enosys:
		t.Errorf("clone3: errno %d, want ENOSYS so that glibc falls back to clone", clone3)
	}
	if _, ok := denied["clone"]; ok {
		t.Error("clone is refused unconditionally; threads and fork need it")
	}
	// CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
	// (CLONE_NEWTIME only exists for clone3 and unshare).
	want := []uint64{0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000}
	slices.Sort(cloneFlags)
	if !slices.Equal(cloneFlags, want) {
		t.Errorf("clone refused for flags %#x, want %#x", cloneFlags, want)
	}
}

func TestWriteSeccompProfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path, err := WriteSeccompProfile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "seccomp-") {
		t.Errorf("path %s, want a seccomp-<hash>.json in %s", path, dir)
	}
	check := func() {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("mode %v, want 0644 (the Podman service may run as another user)", fi.Mode())
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, seccompProfile) {
			t.Error("file differs from the embedded profile")
		}
	}
	check()
	// A damaged file is replaced; a good one is kept.
	if err := os.WriteFile(path, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, err := WriteSeccompProfile(dir, ""); err != nil || again != path {
		t.Fatalf("second write: %s, %v; want %s", again, err, path)
	}
	check()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the state directory, want only the profile", len(ents))
	}
	// gVisor's profile is another file beside it.
	gv, err := WriteSeccompProfile(dir, "runsc")
	if err != nil || gv == path {
		t.Fatalf("gVisor's profile: %s, %v", gv, err)
	}
	if b, _ := os.ReadFile(gv); !bytes.Equal(b, gvisorProfile) {
		t.Error("gVisor's file differs from its profile")
	}
}
