package confine

import (
	"context"
	"sync"
	"time"
)

// ImageWatch is how one caller of a driver's Start or Ready waits for the
// sandbox image when it is not there yet and the engine pulls it: the pull
// runs once for the engine, in the background ([ImageJob]), and every caller
// waiting on it sees its progress. The zero value waits as long as the
// context lets it and ignores the progress.
type ImageWatch struct {
	// Progress receives what the engine reports while this caller waits,
	// line by line. When the pull started earlier, it first receives the
	// line that announced it and the latest one. nil ignores it.
	Progress func(message string)
	// Limit is how long this caller waits for an image being pulled before
	// Start fails with an error that explains the wait. 0 waits as long as
	// the context lets it.
	Limit time.Duration
	// Waited, if non-nil, is told how long the caller waited for the image
	// when it had to wait, once the wait ends.
	Waited func(time.Duration)
}

// ImageJob resolves a driver's sandbox image once, pulling it if needed,
// whoever waits for it: the driver runs the resolution in the background,
// passing its progress lines to [ImageJob.Report], and ends it with
// [ImageJob.Finish]; callers wait with [ImageJob.Wait].
type ImageJob struct {
	started time.Time
	done    chan struct{} // closed when img and err are set
	img     string
	err     error

	mu    sync.Mutex // protects following
	first string     // the first progress line, which says what is pulled
	last  string     // latest progress line
	subs  map[*ImageWatch]struct{}
}

// NewImageJob returns a job started now.
func NewImageJob() *ImageJob {
	return &ImageJob{started: time.Now(), done: make(chan struct{}), subs: map[*ImageWatch]struct{}{}}
}

// Report passes a progress line to every caller waiting.
func (j *ImageJob) Report(line string) {
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

// Finish ends the job with the resolved image or why there is none. Call it
// once.
func (j *ImageJob) Finish(img string, err error) {
	j.img, j.err = img, err
	close(j.done)
}

// Wait waits for the job as watch says. When watch's limit passes first, it
// returns what late says, given how long the job has run and its latest
// progress line.
func (j *ImageJob) Wait(ctx context.Context, watch ImageWatch, late func(running time.Duration, last string) error) (string, error) {
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
		return "", late(time.Since(j.started).Round(time.Second), last)
	}
}

func (w *ImageWatch) see(line string) {
	if w.Progress != nil {
		w.Progress(line)
	}
}
