package podman

import (
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// ImageWatch is how one caller of [Engine.Start] or [Engine.Ready] waits for
// the sandbox image when it is not there yet and Podman pulls it.
type ImageWatch = confine.ImageWatch

// imageJob returns the resolved image, or the job resolving it through c,
// starting one if none runs. A job that failed is not kept: the next caller
// starts another, so an image built or pulled meanwhile is found.
func (e *Engine) imageJob(c *Client) (string, *confine.ImageJob) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.image != "" {
		return e.image, nil
	}
	if e.job != nil {
		return "", e.job
	}
	j := confine.NewImageJob()
	e.job = j
	e.jobs.Go(func() {
		img, err := c.EnsureImage(e.bg, e.opts.Image, j.Report)
		e.mu.Lock()
		if err == nil && e.client == c {
			e.image = img
		}
		e.job = nil
		e.mu.Unlock()
		if err == nil {
			e.log.Info("sandbox ready", "podman", c.URI(), "image", img)
		}
		j.Finish(img, err)
	})
	return "", j
}

// imageLate is the error of a caller whose limit passed while Podman
// prepared the image.
func imageLate(running time.Duration, last string) error {
	return unavailable(nil, "Podman has been preparing the sandbox image for %s, longer than this run's time limit, so the code did not run. The pull goes on in the background: run the code again in a minute (Podman's latest progress: %q)",
		running, last)
}
