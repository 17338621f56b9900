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

// EnsureImage returns the image sandboxes should use. A configured image
// must exist or be pullable; otherwise [confine.DefaultImage] is used if
// present, else [confine.FallbackImage] is pulled. Pull progress is logged
// and, if progress is non-nil, passed to it line by line. When nothing works
// the error is an [*ImageError].
func (c *Client) EnsureImage(ctx context.Context, configured string, progress func(string)) (string, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if configured != "" {
		ok, err := c.ImageExists(ctx, configured)
		if err != nil {
			return "", err
		}
		if ok {
			return configured, nil
		}
		progress(fmt.Sprintf("the configured sandbox image %s is not here: pulling it; only the first run waits", configured))
		if err := c.pull(ctx, configured, progress); err != nil {
			return "", &ImageError{Image: configured, Err: err}
		}
		return configured, nil
	}
	ok, err := c.ImageExists(ctx, confine.DefaultImage)
	if err != nil {
		return "", err
	}
	if ok {
		return confine.DefaultImage, nil
	}
	c.log.Info("sandbox image missing, pulling a fallback", "missing", confine.DefaultImage, "pulling", confine.FallbackImage)
	progress(fmt.Sprintf("the sandbox image %s is not here (codebridge setup --engine docker builds it): pulling %s instead; only the first run waits", confine.DefaultImage, confine.FallbackImage))
	if err := c.pull(ctx, confine.FallbackImage, progress); err != nil {
		return "", &ImageError{Err: err}
	}
	return confine.FallbackImage, nil
}

// ImageError is why there is no sandbox image: the configured one does not
// exist and could not be pulled, or, with none configured, neither
// [confine.DefaultImage] exists nor could [confine.FallbackImage] be
// pulled. It matches [ErrUnavailable].
type ImageError struct {
	Image string // the configured image; "" when none is configured
	Err   error  // why the pull failed
}

func (e *ImageError) Error() string {
	if e.Image != "" {
		return fmt.Sprintf("sandbox image %s is not in Docker and could not be pulled: %v: build it (%s) or configure a local image with python3",
			e.Image, e.Err, SetupHint)
	}
	return fmt.Sprintf("no sandbox image in Docker: %s does not exist and pulling %s failed: %v: build it (%s; no registry needed) or configure another image",
		confine.DefaultImage, confine.FallbackImage, e.Err, SetupHint)
}

func (e *ImageError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrUnavailable].
func (e *ImageError) Is(target error) bool { return target == ErrUnavailable }

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
