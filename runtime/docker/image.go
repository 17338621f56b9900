package docker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
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
	return enginekit.InStore(ctx, c.api(), requestTimeout, "/images/"+name+"/json", name)
}

// Pull pulls ref, logging the progress the daemon streams and passing it
// to progress, one line per layer's step (not each byte count).
func (c *Client) Pull(ctx context.Context, ref string, progress func(string)) error {
	image, tag := splitTag(ref)
	last := "" // the daemon repeats a step with each byte count
	p := enginekit.Puller[pullMessage]{
		API:     c.api(),
		Path:    "/images/create",
		Query:   url.Values{"fromImage": {image}, "tag": {tag}},
		Timeout: pullTimeout,
		Log:     c.log,
		Read: func(m pullMessage) (string, error) {
			if m.Error != "" {
				return "", errors.New(strings.TrimSpace(m.Error))
			}
			line := strings.TrimSpace(m.ID + " " + m.Status)
			if line == "" || line == last {
				return "", nil
			}
			last = line
			return line, nil
		},
		Pulled: func(ctx context.Context) error {
			if ok, err := c.ImageExists(ctx, ref); err != nil || !ok {
				return fmt.Errorf("pull ended without the image (%v)", err)
			}
			return nil
		},
	}
	return p.Pull(ctx, ref, progress)
}

// pullMessage is one message of the progress the daemon streams while it
// pulls an image.
type pullMessage struct {
	Status string `json:"status"`
	ID     string `json:"id"`
	Error  string `json:"error"`
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
