package confine

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// seccompProfile is the sandbox's seccomp profile, which every engine
// applies (Docker takes it inline, Podman as a path on its host). Podman's
// default profile lets code create a user namespace, and inside one a
// process has every capability again (of that namespace), which reopens kernel surface that
// cap-drop ALL closed. This profile allows by default and refuses, with
// EPERM, only what a Python sandbox never needs:
//
//   - new namespaces: unshare, setns, and clone with any CLONE_NEW* flag
//     (one rule per flag: a rule matches on one masked value); clone3, whose
//     flags are in memory seccomp cannot read, fails with ENOSYS so that glibc
//     falls back to clone;
//   - mounting: mount, umount2, pivot_root and the new mount API (fsopen,
//     fsconfig, fsmount, fspick, move_mount, open_tree, mount_setattr);
//   - the kernel keyring (keyctl, add_key, request_key), shared by the host;
//   - interfaces with a record of privilege escalations: bpf,
//     perf_event_open, userfaultfd, io_uring_setup/enter/register;
//   - other processes' memory: ptrace, process_vm_readv, process_vm_writev;
//   - kernel code: kexec_load, kexec_file_load, init_module, finit_module,
//     delete_module;
//   - file handles that bypass paths: name_to_handle_at, open_by_handle_at.
//
// Threads, fork, subprocesses, multiprocessing, asyncio, mmap and sockets
// (there is no network anyway) are untouched.
//
//go:embed seccomp.json
var seccompProfile []byte

// gvisorProfile is seccompProfile without its clone3 rule. gVisor applies
// the profile itself (runsc --oci-seccomp) and answers every refused call
// with EPERM, whatever errno the rule names, so glibc would not fall back
// to clone and no thread would start; and gVisor has no clone3 anyway
// (ENOSYS).
var gvisorProfile = withoutRule(seccompProfile, "clone3")

// SeccompProfile returns the sandbox's seccomp profile (JSON, in the format
// of the OCI runtime spec's seccomp section as Podman and Docker read it)
// for a container under the OCI runtime named runtime ([Spec.Runtime]).
func SeccompProfile(runtime string) []byte { return slices.Clone(profileFor(runtime)) }

func profileFor(runtime string) []byte {
	if GVisor(runtime) {
		return gvisorProfile
	}
	return seccompProfile
}

// withoutRule returns profile without the rules that name only syscall.
func withoutRule(profile []byte, syscall string) []byte {
	var p struct {
		DefaultAction string            `json:"defaultAction"`
		Architectures []string          `json:"architectures"`
		Syscalls      []json.RawMessage `json:"syscalls"`
	}
	if err := json.Unmarshal(profile, &p); err != nil {
		panic("seccomp.json: " + err.Error()) // embedded; its test checks it
	}
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(r json.RawMessage) bool {
		var rule struct{ Names []string }
		return json.Unmarshal(r, &rule) == nil && slices.Equal(rule.Names, []string{syscall})
	})
	out, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		panic("seccomp.json: " + err.Error())
	}
	return append(out, '\n')
}

// WriteSeccompProfile writes the profile for runtime into dir, named by its
// content so codebridge processes of different versions sharing dir do not
// clash, and returns its path.
func WriteSeccompProfile(dir, runtime string) (string, error) {
	profile := profileFor(runtime)
	path := filepath.Join(dir, "seccomp-"+SeccompID(runtime)+".json")
	if b, err := os.ReadFile(path); err == nil && string(b) == string(profile) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("writing the seccomp profile: %w", err)
	}
	if err := writeFileAtomic(path, profile, 0o644); err != nil {
		return "", fmt.Errorf("writing the seccomp profile: %w", err)
	}
	return path, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".seccomp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// SeccompID names the profile for runtime by its content, in the local file
// name and in what carries it to another host.
func SeccompID(runtime string) string {
	sum := sha256.Sum256(profileFor(runtime))
	return hex.EncodeToString(sum[:8])
}
