package podman

import (
	"context"
	"sync"
	"time"
)

// ImageWatch is how one caller of [Engine.Start] or [Engine.Ready] waits for
// the sandbox image when it is not there yet and Podman pulls it: the pull
// runs once for the engine, in the background, and every caller waiting on
// it sees its progress. The zero value waits as long as the context lets it
// and ignores the progress.
type ImageWatch struct {
	// Progress receives what Podman reports while this caller waits, line
	// by line. When the pull started earlier, it first receives the line
	// that announced it and the latest one. nil ignores it.
	Progress func(message string)
	// Limit is how long this caller waits for an image being pulled before
	// Start fails with an error that explains the wait. 0 waits as long as
	// the context lets it.
	Limit time.Duration
	// Waited, if non-nil, is told how long the caller waited for the image
	// when it had to wait, once the wait ends.
	Waited func(time.Duration)
}

// imageJob resolves the sandbox image once for an engine's connection,
// pulling it if needed, whoever waits for it.
type imageJob struct {
	started time.Time
	done    chan struct{} // closed when img and err are set
	img     string
	err     error

	mu    sync.Mutex // protects following
	first string     // the first progress line, which says what is pulled
	last  string     // latest progress line
	subs  map[*ImageWatch]struct{}
}

// imageJob returns the resolved image, or the job resolving it through c,
// starting one if none runs. A job that failed is not kept: the next caller
// starts another, so an image built or pulled meanwhile is found.
func (e *Engine) imageJob(c *Client) (string, *imageJob) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.image != "" {
		return e.image, nil
	}
	if e.job != nil {
		return "", e.job
	}
	j := &imageJob{started: time.Now(), done: make(chan struct{}), subs: map[*ImageWatch]struct{}{}}
	e.job = j
	e.jobs.Go(func() {
		img, err := c.EnsureImage(e.bg, e.opts.Image, j.report)
		e.mu.Lock()
		if err == nil && e.client == c {
			e.image = img
		}
		e.job = nil
		e.mu.Unlock()
		if err == nil {
			e.log.Info("sandbox ready", "podman", c.URI(), "image", img)
		}
		j.img, j.err = img, err
		close(j.done)
	})
	return "", j
}

// report passes a progress line to every caller waiting.
func (j *imageJob) report(line string) {
	j.mu.Lock()
	if j.first == "" {
		j.first = line
	}
	j.last = line
	subs := make([]*ImageWatch, 0, len(j.subs))
	for w := range j.subs {
		subs = append(subs, w)
	}
	j.mu.Unlock()
	for _, w := range subs {
		w.see(line)
	}
}

// wait waits for the job as watch says.
func (j *imageJob) wait(ctx context.Context, watch ImageWatch) (string, error) {
	select {
	case <-j.done:
		return j.img, j.err
	default:
	}
	w := &watch // this caller's subscription
	if w.Waited != nil {
		start := time.Now()
		defer func() { w.Waited(time.Since(start)) }()
	}
	var limit <-chan time.Time
	if w.Limit > 0 {
		t := time.NewTimer(w.Limit)
		defer t.Stop()
		limit = t.C
	}
	j.mu.Lock()
	j.subs[w] = struct{}{}
	first, last := j.first, j.last
	j.mu.Unlock()
	defer func() {
		j.mu.Lock()
		delete(j.subs, w)
		j.mu.Unlock()
	}()
	if first != "" {
		w.see(first)
	}
	if last != first {
		w.see(last)
	}
	select {
	case <-j.done:
		return j.img, j.err
	case <-ctx.Done():
		return "", ctx.Err()
	case <-limit:
		j.mu.Lock()
		last := j.last
		j.mu.Unlock()
		return "", unavailable(nil, "Podman has been preparing the sandbox image for %s, longer than this run's time limit, so the code did not run. The pull goes on in the background: run the code again in a minute (Podman's latest progress: %q)",
			time.Since(j.started).Round(time.Second), last)
	}
}

func (w *ImageWatch) see(line string) {
	if w.Progress != nil {
		w.Progress(line)
	}
}
