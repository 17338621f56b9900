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
)

// Hints in errors, for people who started codebridge with go run or a
// release binary and have no checkout: they name the README, not scripts.
const (
	setupHint   = "see the set-up in codebridge's README, https://github.com/codebridge-mcp/codebridge#two-commands (scripts/setup.sh in a checkout)"
	installHint = "install Podman (Debian and Ubuntu: apt-get install podman runc; macOS: brew install podman, then podman machine init and podman machine start), then " + setupHint
)

// Images [Client.EnsureImage] falls back to.
const (
	// DefaultImage is the sandbox image codebridge's set-up builds.
	DefaultImage = "localhost/codebridge-sandbox:latest"
	// FallbackImage is pulled when DefaultImage does not exist.
	FallbackImage = "docker.io/library/python:3.12-slim"
)

// EnsureImage returns the image sandboxes should use. A configured image
// (MCP_BRIDGE_IMAGE) must exist or be pullable; otherwise [DefaultImage] is
// used if present, else [FallbackImage] is pulled, with progress logged. When
// nothing works the error matches [ErrUnavailable] and names the fix.
func (c *Client) EnsureImage(ctx context.Context, configured string) (string, error) {
	if configured != "" {
		ok, err := c.imageExists(ctx, configured)
		if err != nil {
			return "", err
		}
		if ok {
			return configured, nil
		}
		if err := c.pull(ctx, configured); err != nil {
			return "", unavailable(err, "sandbox image %s (MCP_BRIDGE_IMAGE) does not exist and could not be pulled: %v: build it (%s) or set MCP_BRIDGE_IMAGE to a local image with python3",
				configured, err, setupHint)
		}
		return configured, nil
	}
	ok, err := c.imageExists(ctx, DefaultImage)
	if err != nil {
		return "", err
	}
	if ok {
		return DefaultImage, nil
	}
	c.log.Info("sandbox image missing, pulling a fallback", "missing", DefaultImage, "pulling", FallbackImage)
	if err := c.pull(ctx, FallbackImage); err != nil {
		return "", unavailable(err, "no sandbox image: %s does not exist and pulling %s failed: %v: build it (%s; no registry needed) or set MCP_BRIDGE_IMAGE",
			DefaultImage, FallbackImage, err, setupHint)
	}
	return FallbackImage, nil
}

// imageExists reports whether the image is present locally.
func (c *Client) imageExists(ctx context.Context, name string) (bool, error) {
	err := c.do(ctx, requestTimeout, http.MethodGet, "/images/"+url.PathEscape(name)+"/exists", nil, nil, nil)
	if err == nil {
		return true, nil
	}
	if isStatus(err, http.StatusNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("checking image %s: %w", name, err)
}

// pull pulls ref, logging the progress lines Podman streams.
func (c *Client) pull(ctx context.Context, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	q := url.Values{"reference": {ref}, "quiet": {"false"}}
	resp, err := c.request(ctx, http.MethodPost, "/images/pull", q, nil)
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
	return nil
}
