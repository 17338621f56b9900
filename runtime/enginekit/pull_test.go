package enginekit

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

// testMessage is a driver's message of pull progress.
type testMessage struct {
	Line  string `json:"line"`
	Error string `json:"error"`
}

// TestPull checks that a pull passes on each message's line, ends at the
// first error, at a message it cannot read or when the driver says the
// image did not arrive, and says "pulled" last.
func TestPull(t *testing.T) {
	tests := []struct {
		name      string
		answer    answer
		notPulled bool     // the driver's Pulled fails
		want      string   // the error; "" none
		wantLines []string // what progress is told
	}{
		{name: "pulled", answer: answer{http.StatusOK, `{"line": "a"}{"line": ""}{"line": "b"}`},
			wantLines: []string{"a", "b", "pulled img"}},
		{name: "error", answer: answer{http.StatusOK, `{"line": "a"}{"line": "b", "error": "denied"}{"line": "c"}`},
			want: "denied", wantLines: []string{"a", "b"}},
		{name: "unreadable", answer: answer{http.StatusOK, `{"line": "a"}{"line": `},
			want: "reading pull progress: unexpected EOF", wantLines: []string{"a"}},
		{name: "not pulled", answer: answer{http.StatusOK, `{"line": "a"}`}, notPulled: true,
			want: "no image", wantLines: []string{"a"}},
		{name: "refused", answer: answer{http.StatusInternalServerError, `{"message": "no registry"}`},
			want: "fake POST /images/pull: no registry (HTTP 500)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPI{create: tt.answer, start: tt.answer}
			p := &Puller[testMessage]{
				API:     api.client(t),
				Path:    "/images/pull",
				Query:   url.Values{"reference": {"img"}},
				Timeout: time.Minute,
				Log:     slog.New(slog.DiscardHandler),
				Read: func(m testMessage) (string, error) {
					if m.Error != "" {
						return m.Line, errors.New(m.Error)
					}
					return m.Line, nil
				},
				Pulled: func(context.Context) error {
					if tt.notPulled {
						return errors.New("no image")
					}
					return nil
				},
			}
			var lines []string
			err := p.Pull(t.Context(), "img", func(line string) { lines = append(lines, line) })
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || err.Error() != tt.want) {
				t.Errorf("Pull error = %v, want %q", err, tt.want)
			}
			if !slices.Equal(lines, tt.wantLines) {
				t.Errorf("progress %q, want %q", lines, tt.wantLines)
			}
			if want := []string{"POST /images/pull?reference=img"}; !slices.Equal(api.calls, want) {
				t.Errorf("requests %q, want %q", api.calls, want)
			}
		})
	}
}

// TestInStore checks the answers that say whether an image is in the store.
func TestInStore(t *testing.T) {
	tests := []struct {
		name   string
		answer answer
		want   bool
		err    string
	}{
		{name: "there", answer: answer{http.StatusNoContent, ""}, want: true},
		{name: "missing", answer: answer{http.StatusNotFound, `{"message": "no such image"}`}},
		{name: "failing", answer: answer{http.StatusInternalServerError, `{"message": "store locked"}`},
			err: "checking image img: fake GET /images/img/exists: store locked (HTTP 500)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPI{start: tt.answer}
			got, err := InStore(t.Context(), api.client(t), time.Minute, "/images/img/exists", "img")
			if got != tt.want || tt.err == "" && err != nil || tt.err != "" && (err == nil || err.Error() != tt.err) {
				t.Errorf("InStore = %v, %v; want %v, %q", got, err, tt.want, tt.err)
			}
		})
	}
}
