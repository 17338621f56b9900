// Package restapi is the JSON request and answer that the engine drivers'
// REST clients share (runtime/podman, runtime/docker, runtime/kube): a body
// sent as JSON, a 2xx answer decoded or discarded within a deadline, and an
// answer of any other status read into its message ([ErrorAnswer]) and
// reported as an [*Error] ("podman GET /x: no such container (HTTP 404)");
// and the upgrade of a connection to Docker's and Podman's attach stream
// ([Client.Attach]).
//
// What is a driver's own stays with it, in the [Client] it fills in: how a
// request travels (its connection, versioned URL, headers and credentials:
// [Client.Send]), the name its errors start with, and error types of its own
// where its API words errors otherwise (Kubernetes' status and reason).
package restapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client sends the requests of one engine's REST API.
type Client struct {
	// Engine names the engine at the start of its errors, as in
	// "podman GET /x: decoding answer: ...".
	Engine string
	// Send sends one request and returns the answer, whatever its status.
	// path and query are relative to the API's root; header is never nil
	// and holds the body's Content-Type, if any.
	Send func(ctx context.Context, method, path string, query url.Values, body io.Reader, header http.Header) (*http.Response, error)
	// SendError words an error of Send. Nil means "ENGINE METHOD PATH: err",
	// with ctx's error in place of err once ctx has ended.
	SendError func(ctx context.Context, method, path string, err error) error
	// StatusError turns an answer whose status is not 2xx into the
	// driver's error. Nil means an [*Error].
	StatusError func(method, path string, a ErrorAnswer) error
	// ReaderType is the Content-Type of a body given as an io.Reader; ""
	// sends none.
	ReaderType string
}

// ErrorAnswer is an answer whose status is not 2xx.
type ErrorAnswer struct {
	Code    int    // the HTTP status
	Message string // the JSON body's "message", else the body's text
	Reason  string // the JSON body's "reason" (Kubernetes: NotFound, ...), if any
}

// Error is an answer whose status is not 2xx, as a [Client] without a
// StatusError of its own reports it.
type Error struct {
	Engine, Method, Path string
	ErrorAnswer
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s %s: %s (HTTP %d)", e.Engine, e.Method, e.Path, e.Message, e.Code)
}

// IsStatus reports whether err is an [*Error] of status code.
func IsStatus(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Do sends one request with a deadline of at most timeout. A body that is
// not an io.Reader is sent as JSON (nil for none); a 2xx answer is decoded
// into out, or discarded if out is nil.
func (c *Client) Do(ctx context.Context, timeout time.Duration, method, path string, query url.Values, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := c.Request(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s %s: decoding answer: %w", c.Engine, method, path, err)
	}
	return nil
}

// Request sends one request and returns a 2xx answer, whose body the caller
// closes; another status becomes the driver's error ([Client.StatusError]).
// A body that is not an io.Reader is sent as JSON (nil for none).
func (c *Client) Request(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, error) {
	var rd io.Reader
	header := http.Header{}
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd = b
		if c.ReaderType != "" {
			header.Set("Content-Type", c.ReaderType)
		}
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("%s %s %s: encoding request: %w", c.Engine, method, path, err)
		}
		rd = bytes.NewReader(data)
		header.Set("Content-Type", "application/json")
	}
	resp, err := c.Send(ctx, method, path, query, rd, header)
	if err != nil {
		if c.SendError != nil {
			return nil, c.SendError(ctx, method, path, err)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return nil, fmt.Errorf("%s %s %s: %w", c.Engine, method, path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	return nil, c.AnswerError(method, path, resp)
}

// AnswerError reads resp, an answer to method path whose status is not
// 2xx, closes its body and returns its error: the driver's StatusError, else
// an [*Error].
func (c *Client) AnswerError(method, path string, resp *http.Response) error {
	defer resp.Body.Close()
	a := ReadError(resp)
	if c.StatusError != nil {
		return c.StatusError(method, path, a)
	}
	return &Error{Engine: c.Engine, Method: method, Path: path, ErrorAnswer: a}
}

// ReadError reads the message of an error answer: the JSON body's
// "message" (and "reason") where there is one, else its text.
func ReadError(resp *http.Response) ErrorAnswer {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	a := ErrorAnswer{Code: resp.StatusCode}
	var em struct {
		Message string `json:"message"`
		Reason  string `json:"reason"`
	}
	if json.Unmarshal(data, &em) == nil && em.Message != "" {
		a.Message, a.Reason = em.Message, em.Reason
	} else {
		a.Message = strings.TrimSpace(string(data))
	}
	return a
}
