package enginekit

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/restapi"
)

// Launcher starts containers through the container API that Docker and
// Podman share: it creates a container (POST /containers/create), attaches
// to its stdin, stdout and stderr, and starts it (POST
// /containers/{id}/start). Its fields are what differs between the drivers;
// C is the driver's container.
type Launcher[C Launched] struct {
	Name     string          // the engine as people call it, e.g. "Podman": in logs and errors
	API      *restapi.Client // sends the create and start requests
	Timeout  time.Duration   // bounds each request, and the removal of a container that failed to start
	Log      *slog.Logger
	Declined *Declined // told of a container that could not connect to its socket
	// Created is the driver's container of id, just created with its
	// streams at.
	Created func(id string, at *confine.Attached) C
	// Attach opens the attach stream of container id, stdin, stdout and
	// stderr ([restapi.Client.Attach]).
	Attach func(ctx context.Context, id string) (net.Conn, *bufio.Reader, error)
	// BeforeStart, if not nil, is the last step before the start (Docker
	// asks for the exit code there); its error, as it words it, fails the
	// start.
	BeforeStart func(ctx context.Context, ct C) error
	// MissingImage, if not nil, reports whether a failed create says that
	// the image does not exist.
	MissingImage func(err error) bool
}

// Launched is a driver's container as [Launcher.Launch] handles it.
type Launched interface {
	// Remove has the engine remove it and closes its streams: what undoes
	// a start that failed.
	Remove(ctx context.Context) error
}

// CreateRequest is a driver's body of the create request, in its own
// engine's terms.
type CreateRequest interface {
	// AddChannel gives the container its socket ([confine.Channel]): ch's
	// folder mounted at [confine.MountDir], and the socket's path
	// [confine.SocketPath] in the environment variable env.
	AddChannel(env string, ch *confine.Channel)
}

// Launch creates a container from body, the create request of s, attaches
// to its streams and starts it. When s.Channel is set and channelDir is
// not "", the container gets its socket's folder there; if that folder
// cannot be made, the container talks through the attach stream instead.
// Attaching before starting loses no output. On error nothing is left
// behind: a container created is removed.
func (l *Launcher[C]) Launch(ctx context.Context, s confine.Spec, body CreateRequest, channelDir string) (C, error) {
	var none C
	var ch *confine.Channel
	if s.Channel != "" && channelDir != "" {
		var err error
		if ch, err = confine.NewChannel(channelDir); err != nil {
			l.Log.Warn("the sandbox talks through "+l.Name+"'s attach stream instead of a socket", "err", err)
		} else {
			body.AddChannel(s.Channel, ch)
		}
	}
	var created struct {
		ID       string `json:"Id"`
		Warnings []string
	}
	if err := l.API.Do(ctx, l.Timeout, http.MethodPost, "/containers/create", nil, body, &created); err != nil {
		if ch != nil {
			ch.Close()
		}
		if l.MissingImage != nil && l.MissingImage(err) {
			return none, fmt.Errorf("creating container: image %s not found: %w", s.Image, err)
		}
		return none, fmt.Errorf("creating container from %s: %w", s.Image, err)
	}
	id, short, lower := created.ID, ShortID(created.ID), strings.ToLower(l.Name)
	for _, w := range created.Warnings {
		l.Log.Warn(lower+" create warning", "container", short, "warning", w)
	}
	at := confine.NewAttached(ch)
	ct := l.Created(id, at)
	fail := func(err error) (C, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.Timeout)
		defer cancel()
		if rerr := ct.Remove(rctx); rerr != nil {
			l.Log.Warn("removing failed container", "container", short, "err", rerr)
		}
		return none, err
	}

	conn, br, err := l.Attach(ctx, id)
	if err != nil {
		return fail(fmt.Errorf("attaching to container %s: %w", short, err))
	}
	at.Attach(conn, br, "container "+short+": "+lower+" attach")

	if l.BeforeStart != nil {
		if err := l.BeforeStart(ctx, ct); err != nil {
			return fail(err)
		}
	}
	if err := l.API.Do(ctx, l.Timeout, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil); err != nil {
		if hint := confine.GVisorStartHint(s.Runtime, err.Error()); hint != "" {
			err = fmt.Errorf("%w: %s", err, hint)
		}
		return fail(fmt.Errorf("starting container %s: %w", short, err))
	}
	if ch != nil {
		l.Declined.Negotiate(at, l.Name, id, l.Log)
	}
	return ct, nil
}
