package confine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
)

// ErrUnavailable is matched (with [errors.Is]) by every error of a driver
// saying that its engine cannot be used at all: not installed, not
// reachable, or no usable image. The error's message says how to fix it.
var ErrUnavailable = errors.New("container engine unavailable")

// UnavailableError is an [ErrUnavailable] error with a message for the user.
type UnavailableError struct {
	Msg string // what happened and what to do
	Err error  // the underlying cause, if any
}

func (e *UnavailableError) Error() string { return e.Msg }

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrUnavailable].
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unavailable returns an [*UnavailableError] caused by err (which may be
// nil) with a formatted message.
func Unavailable(err error, format string, args ...any) error {
	return &UnavailableError{Msg: fmt.Sprintf(format, args...), Err: err}
}

// ImageStore is an engine's image store, as [ResolveImage] uses it.
type ImageStore interface {
	// ImageExists reports whether the image is in the store.
	ImageExists(ctx context.Context, name string) (bool, error)
	// Pull pulls ref, passing its progress to progress line by line.
	Pull(ctx context.Context, ref string, progress func(string)) error
}

// ImagePolicy is what [ResolveImage] resolves.
type ImagePolicy struct {
	Configured string // the configured image; "" chooses DefaultImage, else FallbackImage
	Build      string // the command that builds DefaultImage, e.g. "codebridge setup"
	Hint       string // how to build and check it, for [ImageError]
}

// ResolveImage returns the image sandboxes should use, the same way on every
// engine: a configured image must exist or be pullable; otherwise
// [DefaultImage] is used if present, else [FallbackImage] is pulled. Pull
// progress goes to progress (nil ignores it). When nothing works the error
// is an [*ImageError].
func ResolveImage(ctx context.Context, s ImageStore, p ImagePolicy, progress func(string), log *slog.Logger) (string, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if p.Configured != "" {
		ok, err := s.ImageExists(ctx, p.Configured)
		if err != nil {
			return "", err
		}
		if ok {
			return p.Configured, nil
		}
		progress(fmt.Sprintf("the configured sandbox image %s is not here: pulling it; only the first run waits", p.Configured))
		if err := s.Pull(ctx, p.Configured, progress); err != nil {
			return "", &ImageError{Image: p.Configured, Err: err, Hint: p.Hint}
		}
		return p.Configured, nil
	}
	ok, err := s.ImageExists(ctx, DefaultImage)
	if err != nil {
		return "", err
	}
	if ok {
		return DefaultImage, nil
	}
	log.Info("sandbox image missing, pulling a fallback", "missing", DefaultImage, "pulling", FallbackImage)
	progress(fmt.Sprintf("the sandbox image %s is not here (%s builds it): pulling %s instead; only the first run waits", DefaultImage, p.Build, FallbackImage))
	if err := s.Pull(ctx, FallbackImage, progress); err != nil {
		return "", &ImageError{Err: err, Hint: p.Hint}
	}
	return FallbackImage, nil
}

// ImageError is why there is no sandbox image: the configured one does not
// exist and could not be pulled, or, with none configured, neither
// [DefaultImage] exists nor could [FallbackImage] be pulled. It matches
// [ErrUnavailable].
type ImageError struct {
	Image string // the configured image; "" when none is configured
	Err   error  // why the pull failed
	Hint  string // how to build the image and check it, on this engine
}

func (e *ImageError) Error() string {
	if e.Image != "" {
		return fmt.Sprintf("sandbox image %s does not exist and could not be pulled: %v: build it (%s) or configure a local image with python3",
			e.Image, e.Err, e.Hint)
	}
	return fmt.Sprintf("no sandbox image: %s does not exist and pulling %s failed: %v: build it (%s; no registry needed) or configure another image",
		DefaultImage, FallbackImage, e.Err, e.Hint)
}

func (e *ImageError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrUnavailable].
func (e *ImageError) Is(target error) bool { return target == ErrUnavailable }

// LoopbackRegistry reports whether ref names an image on a registry at a
// loopback address (127.0.0.1:5000/x, [::1]:5000/x, localhost:5000/x).
func LoopbackRegistry(ref string) bool {
	host, _, ok := strings.Cut(ref, "/")
	if !ok || !strings.ContainsAny(host, ".:") && host != "localhost" {
		return false // a short name such as library/python
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
