package podman

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// Hints in errors, for people who started codebridge with go run or a
// release binary and have no checkout: they name codebridge setup and the
// README, not scripts.
const (
	// SetupHint is how to install what the sandbox needs and check it.
	SetupHint   = "run codebridge setup, which installs Podman and builds the sandbox image, and codebridge doctor, which checks each piece (https://github.com/codebridge-mcp/codebridge#two-commands)"
	installHint = "install Podman: codebridge setup does it, or by hand apt-get install podman runc (Debian and Ubuntu), brew install podman, then podman machine init and podman machine start (macOS); " + SetupHint
)

// ImageError is why there is no sandbox image. It matches [ErrUnavailable].
type ImageError = confine.ImageError

// imagePolicy is how an [Engine] resolves its image
// ([confine.ResolveImage]): configured, else the default image that
// 'codebridge setup' builds.
func imagePolicy(configured string) confine.ImagePolicy {
	return confine.ImagePolicy{Configured: configured, Build: "codebridge setup", Hint: SetupHint}
}

// ImageExists reports whether the image is present in Podman's store.
func (c *Client) ImageExists(ctx context.Context, name string) (bool, error) {
	err := c.api().Do(ctx, requestTimeout, http.MethodGet, "/images/"+url.PathEscape(name)+"/exists", nil, nil, nil)
	if err == nil {
		return true, nil
	}
	if isStatus(err, http.StatusNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("checking image %s: %w", name, err)
}

// Pull pulls ref, logging the progress lines Podman streams and passing them
// to progress. An image on a loopback registry is pulled without TLS, as
// Docker does by default: nothing but this machine can listen there.
func (c *Client) Pull(ctx context.Context, ref string, progress func(string)) error {
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	q := url.Values{"reference": {ref}, "quiet": {"false"}}
	if confine.LoopbackRegistry(ref) {
		q.Set("tlsVerify", "false")
	}
	resp, err := c.api().Request(ctx, http.MethodPost, "/images/pull", q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	pulled := false
	for {
		var rep struct {
			Stream string   `json:"stream"`
			Error  string   `json:"error"`
			Images []string `json:"images"`
			ID     string   `json:"id"`
		}
		if err := dec.Decode(&rep); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("reading pull progress: %w", err)
		}
		if s := strings.TrimSpace(rep.Stream); s != "" {
			c.log.Info("pulling image", "image", ref, "progress", s)
			progress(s)
		}
		if rep.Error != "" {
			return errors.New(strings.TrimSpace(rep.Error))
		}
		if rep.ID != "" || len(rep.Images) > 0 {
			pulled = true
		}
	}
	if !pulled {
		return errors.New("pull ended without an image")
	}
	c.log.Info("pulled image", "image", ref)
	progress("pulled " + ref)
	return nil
}
