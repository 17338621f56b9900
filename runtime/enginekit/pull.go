package enginekit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/restapi"
)

// Puller pulls an image the way Docker's and Podman's APIs both do: one
// POST whose answer streams the pull's progress as JSON messages until the
// pull ends. Its fields are what differs between the drivers: the endpoint
// and the progress format; M is the driver's message.
type Puller[M any] struct {
	API     *restapi.Client // sends the request
	Path    string          // the endpoint, e.g. "/images/pull"
	Query   url.Values      // names the image
	Timeout time.Duration   // bounds the whole pull
	Log     *slog.Logger
	// Read reads one message: the progress line it carries ("" none), and
	// the error it reports, which ends the pull.
	Read func(m M) (line string, err error)
	// Pulled, called once the messages have ended, says why the image did
	// not arrive, or nil when it did.
	Pulled func(ctx context.Context) error
}

// Pull pulls ref, logging each line of progress and passing it to
// progress, and last "pulled REF".
func (p *Puller[M]) Pull(ctx context.Context, ref string, progress func(string)) error {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	resp, err := p.API.Request(ctx, http.MethodPost, p.Path, p.Query, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var m M
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("reading pull progress: %w", err)
		}
		line, err := p.Read(m)
		if line != "" {
			p.Log.Info("pulling image", "image", ref, "progress", line)
			progress(line)
		}
		if err != nil {
			return err
		}
	}
	if err := p.Pulled(ctx); err != nil {
		return err
	}
	p.Log.Info("pulled image", "image", ref)
	progress("pulled " + ref)
	return nil
}

// InStore reports whether image name is in the engine's store, asking
// path, its endpoint for the image, within timeout: a 2xx answer means it
// is, a 404 that it is not.
func InStore(ctx context.Context, api *restapi.Client, timeout time.Duration, path, name string) (bool, error) {
	err := api.Do(ctx, timeout, http.MethodGet, path, nil, nil, nil)
	if err == nil {
		return true, nil
	}
	if restapi.IsStatus(err, http.StatusNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("checking image %s: %w", name, err)
}
