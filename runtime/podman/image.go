package podman

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
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
	return enginekit.InStore(ctx, c.api(), requestTimeout, "/images/"+url.PathEscape(name)+"/exists", name)
}

// Pull pulls ref, logging the progress lines Podman streams and passing them
// to progress. An image on a loopback registry is pulled without TLS, as
// Docker does by default: nothing but this machine can listen there.
func (c *Client) Pull(ctx context.Context, ref string, progress func(string)) error {
	q := url.Values{"reference": {ref}, "quiet": {"false"}}
	if confine.LoopbackRegistry(ref) {
		q.Set("tlsVerify", "false")
	}
	pulled := false
	p := enginekit.Puller[pullReport]{
		API:     c.api(),
		Path:    "/images/pull",
		Query:   q,
		Timeout: pullTimeout,
		Log:     c.log,
		Read: func(r pullReport) (string, error) {
			line := strings.TrimSpace(r.Stream)
			if r.Error != "" {
				return line, errors.New(strings.TrimSpace(r.Error))
			}
			pulled = pulled || r.ID != "" || len(r.Images) > 0
			return line, nil
		},
		Pulled: func(context.Context) error {
			if !pulled {
				return errors.New("pull ended without an image")
			}
			return nil
		},
	}
	return p.Pull(ctx, ref, progress)
}

// pullReport is one message of the progress Podman streams while it pulls
// an image.
type pullReport struct {
	Stream string   `json:"stream"`
	Error  string   `json:"error"`
	Images []string `json:"images"`
	ID     string   `json:"id"`
}
