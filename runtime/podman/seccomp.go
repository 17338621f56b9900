package podman

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// seccompProfile is the sandbox's seccomp profile. Podman's default profile
// lets code create a user namespace, and inside one a process has every
// capability again (of that namespace), which reopens kernel surface that
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

// SharesFiles reports whether the Podman service at uri reads this host's
// files, so that a path here (the seccomp profile, a sandbox's socket
// folder) means the same file to it: a unix socket on Linux. Elsewhere a unix socket is podman machine's forward
// into a VM, and ssh:// and tcp:// reach another host.
func SharesFiles(uri string) bool {
	return runtime.GOOS == "linux" && strings.HasPrefix(uri, "unix://")
}

// writeSeccompProfile writes the profile into dir, named by its content so
// codebridge processes of different versions sharing dir do not clash, and
// returns its path.
func writeSeccompProfile(dir string) (string, error) {
	path := filepath.Join(dir, "seccomp-"+profileID()+".json")
	if b, err := os.ReadFile(path); err == nil && string(b) == string(seccompProfile) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("writing the seccomp profile: %w", err)
	}
	if err := writeFileAtomic(path, seccompProfile, 0o644); err != nil {
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

// profileID names the profile by its content, in the local file name and in
// the volume that carries it to another host.
func profileID() string {
	sum := sha256.Sum256(seccompProfile)
	return hex.EncodeToString(sum[:8])
}

// seccompVolumeDir is where the helper container mounts the profile's volume.
const seccompVolumeDir = "/codebridge-seccomp"

// placeSeccompProfile puts the profile on a Podman host that does not share
// codebridge's files (over ssh, in podman machine's VM) and returns its path
// there, for the Podman service to read at container create. It goes where
// only the Podman API reaches: into a volume named by the profile's content,
// through a helper container of image that is created, never started, and
// removed. The volume stays, a few kilobytes, for the next codebridge.
func (c *Client) placeSeccompProfile(ctx context.Context, image string) (string, error) {
	name := "codebridge-seccomp-" + profileID()
	create := map[string]any{"Name": name, "Label": map[string]string{LabelManaged: "true"}}
	if err := c.do(ctx, requestTimeout, http.MethodPost, "/volumes/create", nil, create, nil); err != nil &&
		!isStatus(err, http.StatusConflict) && !strings.Contains(err.Error(), "already exists") {
		return "", fmt.Errorf("creating the volume for the seccomp profile: %w", err)
	}
	var vol struct{ Mountpoint string }
	if err := c.do(ctx, requestTimeout, http.MethodGet, "/volumes/"+name+"/json", nil, nil, &vol); err != nil {
		return "", fmt.Errorf("inspecting the volume of the seccomp profile: %w", err)
	}
	if !strings.HasPrefix(vol.Mountpoint, "/") {
		return "", fmt.Errorf("the volume %s of the seccomp profile has no path on the Podman host (mount point %q)", name, vol.Mountpoint)
	}

	labels := maps.Clone(c.owner)
	labels[LabelManaged] = "true"
	helper := map[string]any{
		"image":   image,
		"command": []string{"true"},
		"labels":  labels,
		"netns":   namespace{NSMode: "none"},
		"volumes": []map[string]string{{"Name": name, "Dest": seccompVolumeDir}},
	}
	var created struct {
		ID string `json:"Id"`
	}
	if err := c.do(ctx, requestTimeout, http.MethodPost, "/containers/create", nil, helper, &created); err != nil {
		return "", fmt.Errorf("creating a container to copy the seccomp profile into its volume: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		defer cancel()
		if err := c.remove(rctx, created.ID); err != nil {
			c.log.Warn("removing the container that copied the seccomp profile", "err", err)
		}
	}()
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	err := tw.WriteHeader(&tar.Header{Name: "seccomp.json", Mode: 0o644, Size: int64(len(seccompProfile)), ModTime: time.Now()})
	if err == nil {
		_, err = tw.Write(seccompProfile)
	}
	if err = errors.Join(err, tw.Close()); err != nil {
		return "", fmt.Errorf("packing the seccomp profile: %w", err)
	}
	q := url.Values{"path": {seccompVolumeDir}}
	if err := c.do(ctx, requestTimeout, http.MethodPut, "/containers/"+created.ID+"/archive", q, &archive, nil); err != nil {
		return "", fmt.Errorf("copying the seccomp profile into its volume: %w", err)
	}
	return strings.TrimSuffix(vol.Mountpoint, "/") + "/seccomp.json", nil
}
