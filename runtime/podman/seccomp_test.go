package podman

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

func TestSharesFiles(t *testing.T) {
	for _, tt := range []struct {
		uri  string
		want bool
	}{
		{"unix:///run/podman/podman.sock", runtime.GOOS == "linux"},
		{"ssh://core@localhost:2222/run/podman/podman.sock", false},
		{"tcp://127.0.0.1:8080", false},
	} {
		if got := SharesFiles(tt.uri); got != tt.want {
			t.Errorf("SharesFiles(%q) = %v, want %v", tt.uri, got, tt.want)
		}
	}
}

// TestPlaceSeccompProfile puts the profile on the Podman host through the
// API, as for a Podman reached over ssh: the file in the volume is the
// profile, a second placement finds the volume there, and no helper
// container is left.
func TestPlaceSeccompProfile(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	for range 2 {
		path, err := c.placeSeccompProfile(t.Context(), img, testenv.Runtime())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(path, "codebridge-seccomp-"+confine.SeccompID(testenv.Runtime())) || filepath.Base(path) != "seccomp.json" {
			t.Errorf("profile path %q; want seccomp.json in the volume named by its content", path)
		}
		// This Podman runs here, so its volume can be read directly.
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, confine.SeccompProfile(testenv.Runtime())) {
			t.Errorf("the file in the volume is not the profile (%d bytes, %v)", len(got), err)
		}
	}
	list, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Labels[labelClient] == c.owner[labelClient] {
			t.Errorf("container %s left behind by placing the profile", enginekit.ShortID(s.ID))
		}
	}
}

// BenchmarkStartSeccomp starts containers alternately with Podman's default
// seccomp profile and with codebridge's, and reports the median start time
// (create, attach, start) of each.
func BenchmarkStartSeccomp(b *testing.B) {
	c := testClient(b)
	img := testImage(b, c)
	ours, err := confine.WriteSeccompProfile(b.TempDir(), testenv.Runtime())
	if err != nil {
		b.Fatal(err)
	}
	modes := []struct {
		name    string
		profile string
		times   []time.Duration
	}{{name: "podman-default-ms"}, {name: "codebridge-ms", profile: ours}}
	for b.Loop() {
		for i := range modes {
			m := &modes[i]
			start := time.Now()
			ct, err := c.start(b.Context(), confine.Spec{Image: img, Command: []string{"true"}}, placement{seccomp: m.profile})
			if err != nil {
				b.Fatal(err)
			}
			m.times = append(m.times, time.Since(start))
			if err := ct.Remove(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, m := range modes {
		slices.Sort(m.times)
		b.ReportMetric(float64(m.times[len(m.times)/2].Microseconds())/1000, m.name)
	}
	b.ReportMetric(0, "ns/op")
}

// TestSeccompRewritten: a profile removed from the state directory while
// codebridge runs is written again for the next container.
func TestSeccompRewritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the profile is used only with a Podman on this Linux host")
	}
	c := &Client{uri: "unix:///run/podman/podman.sock", stateDir: t.TempDir()}
	path, err := c.seccomp(t.Context(), "", "")
	if err != nil || path == "" {
		t.Fatalf("seccomp: %q, %v", path, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if again, err := c.seccomp(t.Context(), "", ""); err != nil || again != path {
		t.Fatalf("seccomp again: %q, %v; want %q", again, err, path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("profile not written again: %v", err)
	}
}

// TestSeccompUnwritable: a local Podman without the profile is an error, not
// a sandbox quietly running with Podman's default.
func TestSeccompUnwritable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the profile is used only with a Podman on this Linux host")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Client{uri: "unix:///run/podman/podman.sock", stateDir: filepath.Join(file, "state")}
	path, err := c.seccomp(t.Context(), "", "")
	if err == nil || !strings.Contains(err.Error(), "seccomp profile") {
		t.Fatalf("seccomp: %q, %v; want an error about the profile", path, err)
	}
}

// BenchmarkPlaceSeccompProfile is what a remote Podman's first sandbox pays
// once per connection to receive the profile (here on the local socket, so
// without the ssh round trips).
//
//	go test ./runtime/podman -run '^$' -bench PlaceSeccompProfile -benchtime 10x
func BenchmarkPlaceSeccompProfile(b *testing.B) {
	c := testClient(b)
	img := testImage(b, c)
	for b.Loop() {
		if _, err := c.placeSeccompProfile(b.Context(), img, testenv.Runtime()); err != nil {
			b.Fatal(err)
		}
	}
}
