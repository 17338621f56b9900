package podman

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// SharesFiles reports whether the Podman service at uri reads this host's
// files, so that a path here (the seccomp profile, a sandbox's socket
// folder) means the same file to it: a unix socket on Linux. Elsewhere a unix socket is podman machine's forward
// into a VM, and ssh:// and tcp:// reach another host.
func SharesFiles(uri string) bool {
	return runtime.GOOS == "linux" && strings.HasPrefix(uri, "unix://")
}

// seccompVolumeDir is where the helper container mounts the profile's volume.
const seccompVolumeDir = "/codebridge-seccomp"

// placeSeccompProfile puts the profile for runtime on a Podman host that does not share
// codebridge's files (over ssh, in podman machine's VM) and returns its path
// there, for the Podman service to read at container create. It goes where
// only the Podman API reaches: into a volume named by the profile's content,
// through a helper container of image that is created, never started, and
// removed. The volume stays, a few kilobytes, for the next codebridge.
func (c *Client) placeSeccompProfile(ctx context.Context, image, runtime string) (string, error) {
	name := "codebridge-seccomp-" + confine.SeccompID(runtime)
	create := map[string]any{"Name": name, "Label": map[string]string{confine.LabelManaged: "true"}}
	if err := c.api().Do(ctx, requestTimeout, http.MethodPost, "/volumes/create", nil, create, nil); err != nil &&
		!isStatus(err, http.StatusConflict) && !strings.Contains(err.Error(), "already exists") {
		return "", fmt.Errorf("creating the volume for the seccomp profile: %w", err)
	}
	var vol struct{ Mountpoint string }
	if err := c.api().Do(ctx, requestTimeout, http.MethodGet, "/volumes/"+name+"/json", nil, nil, &vol); err != nil {
		return "", fmt.Errorf("inspecting the volume of the seccomp profile: %w", err)
	}
	if !strings.HasPrefix(vol.Mountpoint, "/") {
		return "", fmt.Errorf("the volume %s of the seccomp profile has no path on the Podman host (mount point %q)", name, vol.Mountpoint)
	}

	labels := maps.Clone(c.owner)
	labels[confine.LabelManaged] = "true"
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
	if err := c.api().Do(ctx, requestTimeout, http.MethodPost, "/containers/create", nil, helper, &created); err != nil {
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
	profile := confine.SeccompProfile(runtime)
	tw := tar.NewWriter(&archive)
	err := tw.WriteHeader(&tar.Header{Name: "seccomp.json", Mode: 0o644, Size: int64(len(profile)), ModTime: time.Now()})
	if err == nil {
		_, err = tw.Write(profile)
	}
	if err = errors.Join(err, tw.Close()); err != nil {
		return "", fmt.Errorf("packing the seccomp profile: %w", err)
	}
	q := url.Values{"path": {seccompVolumeDir}}
	if err := c.api().Do(ctx, requestTimeout, http.MethodPut, "/containers/"+created.ID+"/archive", q, &archive, nil); err != nil {
		return "", fmt.Errorf("copying the seccomp profile into its volume: %w", err)
	}
	return strings.TrimSuffix(vol.Mountpoint, "/") + "/seccomp.json", nil
}
