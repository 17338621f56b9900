package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// The sweep: what no replica will delete any more. A sandbox pod ends by
// itself (its interpreter exits when no run comes for its wait limit, and
// restartPolicy Never keeps it ended), so what remains is the ended pods,
// which the replica that ran them deletes but a dead one cannot, and the
// pods of codebridge processes of this host that have exited
// ([confine.Owner.Stale]), which any replica may delete at once. Every
// replica sweeps its namespace at connect and every sweepInterval.
const (
	sweepInterval = 2 * time.Minute
	// endedGrace is how long an ended pod is left to the replica that ran
	// it, which reads its exit status, before any replica deletes it.
	endedGrace = time.Minute
	// youngGrace is how long a pod of a dead owner that still runs is left
	// to end by itself first.
	youngGrace = time.Minute
)

// PodSummary is a sandbox pod as [Engine.List] lists it.
type PodSummary struct {
	Name   string
	Phase  string
	Labels map[string]string // its labels and annotations: confine's labels may only fit an annotation
	// Ended is when its container ended; zero while it runs.
	Ended   time.Time
	Created time.Time
	Deleted bool // being deleted
}

// List returns the namespace's codebridge pods ([confine.LabelManaged]), of
// every replica.
func (e *Engine) List(ctx context.Context) ([]PodSummary, error) {
	c, ns, err := e.connected(ctx)
	if err != nil {
		return nil, err
	}
	return list(ctx, c, ns, confine.LabelManaged+"=true")
}

func list(ctx context.Context, c *Client, ns, selector string) ([]PodSummary, error) {
	var pods struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
			Status   struct {
				Phase             string `json:"phase"`
				ContainerStatuses []struct {
					State struct {
						Terminated *struct {
							FinishedAt time.Time `json:"finishedAt"`
						} `json:"terminated"`
					} `json:"state"`
				} `json:"containerStatuses"`
			} `json:"status"`
		} `json:"items"`
	}
	q := url.Values{"labelSelector": {selector}}
	if err := c.api().Do(ctx, requestTimeout, http.MethodGet, podsPath(ns), q, nil, &pods); err != nil {
		return nil, err
	}
	out := make([]PodSummary, 0, len(pods.Items))
	for _, p := range pods.Items {
		s := PodSummary{Name: p.Metadata.Name, Phase: p.Status.Phase, Labels: map[string]string{}, Deleted: p.Metadata.DeletionTimestamp != ""}
		maps.Copy(s.Labels, p.Metadata.Labels)
		maps.Copy(s.Labels, p.Metadata.Annotations)
		s.Created, _ = time.Parse(time.RFC3339, p.Metadata.CreationTimestamp)
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				s.Ended = t.FinishedAt
			}
		}
		if s.Ended.IsZero() && (s.Phase == "Succeeded" || s.Phase == "Failed") {
			s.Ended = s.Created // ended before a container ran
		}
		out = append(out, s)
	}
	return out, nil
}

// Sweep deletes, as self, the pods no replica will delete: those ended
// longer than a grace ago, and those of codebridge processes of self's host
// that have exited; with grace 0 also the young ones. It says how many it
// deleted.
func (e *Engine) Sweep(ctx context.Context, self confine.Owner, grace time.Duration) (int, error) {
	c, ns, err := e.connected(ctx)
	if err != nil {
		return 0, err
	}
	return sweep(ctx, c, ns, self, grace)
}

func sweep(ctx context.Context, c *Client, ns string, self confine.Owner, grace time.Duration) (int, error) {
	pods, err := list(ctx, c, ns, confine.LabelManaged+"=true")
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, p := range pods {
		if p.Deleted {
			continue
		}
		ended := !p.Ended.IsZero() && time.Since(p.Ended) >= min(grace, endedGrace)
		stale := self.Stale(p.Labels) && (!p.Ended.IsZero() || time.Since(p.Created) >= grace)
		if !ended && !stale {
			continue
		}
		del := deletePod
		if claim := p.Labels[LabelClaim]; claim != "" {
			del, p.Name = deleteClaim, claim
		}
		if err := del(ctx, c, ns, p.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// sweepLoop sweeps at once and every sweepInterval until the engine closes.
func (e *Engine) sweepLoop(c *Client, ns string) {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(e.bg, requestTimeout*4)
		n, err := sweep(ctx, c, ns, e.owner, youngGrace)
		cancel()
		switch {
		case err != nil && e.bg.Err() == nil:
			e.log.Warn("sweeping sandbox pods no replica will delete", "namespace", ns, "err", err)
		case n > 0:
			e.log.Info("deleted sandbox pods no replica will delete", "namespace", ns, "count", n)
		}
		select {
		case <-e.bg.Done():
			return
		case <-t.C:
		}
	}
}

// RemovePod deletes a pod by name, whichever replica made it; a pod gone is
// not an error.
func (e *Engine) RemovePod(ctx context.Context, name string) error {
	c, ns, err := e.connected(ctx)
	if err != nil {
		return err
	}
	return deletePod(ctx, c, ns, name)
}

// deletePod deletes a pod at once ([deleteOptions]); a pod gone is not an
// error.
func deletePod(ctx context.Context, c *Client, ns, name string) error {
	err := c.api().Do(ctx, requestTimeout, http.MethodDelete, podsPath(ns)+"/"+url.PathEscape(name), nil, deleteOptions(), nil)
	if err != nil && !IsNotFound(err) {
		return fmt.Errorf("deleting sandbox pod %s: %w", name, err)
	}
	return nil
}
