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

// ImageError is why there is no sandbox image. It matches [ErrUnavailable].
type ImageError = confine.ImageError

// imagePolicy is how an [Engine] resolves its image
// ([confine.ResolveImage]): configured, else the default image that
// 'codebridge setup --engine docker' builds.
func imagePolicy(configured string) confine.ImagePolicy {
	return confine.ImagePolicy{Configured: configured, Build: "codebridge setup --engine docker", Hint: SetupHint}
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

// Pull pulls ref, logging the progress the daemon streams and passing it
// to progress, one line per layer's step (not each byte count).
func (c *Client) Pull(ctx context.Context, ref string, progress func(string)) error {
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
