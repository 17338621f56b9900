package docker

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

// EnsureImage returns the image sandboxes should use
// ([confine.ResolveImage]): the configured one, else
// [confine.DefaultImage] if present, else [confine.FallbackImage], pulled.
// Pull progress is logged and, if progress is non-nil, passed to it line by
// line. When nothing works the error is an [*ImageError].
func (c *Client) EnsureImage(ctx context.Context, configured string, progress func(string)) (string, error) {
	return confine.ResolveImage(ctx, store{c}, confine.ImagePolicy{Configured: configured, Build: "codebridge setup --engine docker", Hint: SetupHint}, progress, c.log)
}

// ImageError is why there is no sandbox image. It matches [ErrUnavailable].
type ImageError = confine.ImageError

// store is Docker's image store as [confine.ResolveImage] uses it.
type store struct{ c *Client }

func (s store) ImageExists(ctx context.Context, name string) (bool, error) {
	return s.c.ImageExists(ctx, name)
}

func (s store) Pull(ctx context.Context, ref string, progress func(string)) error {
	return s.c.pull(ctx, ref, progress)
}

// ImageExists reports whether the image is in the daemon's store.
func (c *Client) ImageExists(ctx context.Context, name string) (bool, error) {
	err := c.do(ctx, http.MethodGet, "/images/"+name+"/json", nil, nil, nil)
	if err == nil {
		return true, nil
	}
	if isStatus(err, http.StatusNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("checking image %s: %w", name, err)
}

// pull pulls ref, logging the progress the daemon streams and passing it
// to progress, one line per layer's step (not each byte count).
func (c *Client) pull(ctx context.Context, ref string, progress func(string)) error {
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	image, tag := splitTag(ref)
	resp, err := c.request(ctx, http.MethodPost, "/images/create", url.Values{"fromImage": {image}, "tag": {tag}}, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	last := ""
	for {
		var m struct {
			Status string `json:"status"`
			ID     string `json:"id"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("reading pull progress: %w", err)
		}
		if m.Error != "" {
			return errors.New(strings.TrimSpace(m.Error))
		}
		line := strings.TrimSpace(strings.TrimSpace(m.ID + " " + m.Status))
		if line != "" && line != last {
			last = line
			c.log.Info("pulling image", "image", ref, "progress", line)
			progress(line)
		}
	}
	if ok, err := c.ImageExists(ctx, ref); err != nil || !ok {
		return fmt.Errorf("pull ended without the image (%v)", err)
	}
	c.log.Info("pulled image", "image", ref)
	progress("pulled " + ref)
	return nil
}

// splitTag splits ref into its repository and tag ("latest" when none); a
// digest stays in the repository.
func splitTag(ref string) (string, string) {
	if strings.Contains(ref, "@") {
		return ref, ""
	}
	i := strings.LastIndexByte(ref, ':')
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, "latest"
	}
	return ref[:i], ref[i+1:]
}
