package setup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMirrorIn(t *testing.T) {
	for _, tc := range []struct{ name, sources, want string }{
		{"one-line", "deb http://mirror.example/debian bookworm main\n", "http://mirror.example/debian"},
		{"options", "deb [arch=amd64 signed-by=/k.gpg] https://m.example/debian bookworm main\n", "https://m.example/debian"},
		{"security first", "deb http://security.debian.org/debian-security bookworm-security main\ndeb http://m.example/debian bookworm main\n", "http://m.example/debian"},
		{"deb822", "Types: deb\nURIs: http://m.example/debian\nSuites: bookworm\n", "http://m.example/debian"},
		{"deb-src only", "deb-src http://m.example/debian bookworm main\n", ""},
		{"comment", "# deb http://m.example/debian bookworm main\n", ""},
	} {
		if got := mirrorIn(strings.NewReader(tc.sources)); got != tc.want {
			t.Errorf("%s: mirrorIn = %q; want %q", tc.name, got, tc.want)
		}
	}
}

func TestAptMirror(t *testing.T) {
	dir := t.TempDir()
	if got := aptMirror(filepath.Join(dir, "none"), filepath.Join(dir, "none.d")); got != "http://deb.debian.org/debian" {
		t.Errorf("no sources: %q; want deb.debian.org", got)
	}
	d := filepath.Join(dir, "sources.list.d")
	os.Mkdir(d, 0o755)
	os.WriteFile(filepath.Join(d, "debian.sources"), []byte("URIs: http://m.example/debian\n"), 0o644)
	if got := aptMirror(filepath.Join(dir, "sources.list"), d); got != "http://m.example/debian" {
		t.Errorf("deb822 file: %q", got)
	}
}

func TestVariant(t *testing.T) {
	for img, want := range map[string]string{DataImage: "data", MinimalImage: "minimal", "python:3.12-slim": ""} {
		if got, ours := Variant(img); got != want || ours != (want != "") {
			t.Errorf("Variant(%q) = %q, %v", img, got, ours)
		}
	}
}

func TestConfPath(t *testing.T) {
	env := map[string]string{}
	s := &setup{Options: Options{Getenv: func(k string) string { return env[k] }}}
	if os.Geteuid() == 0 {
		if got := s.confPath(); got != defaultConfPath() {
			t.Errorf("root: %q; want %q", got, defaultConfPath())
		}
	} else {
		env["XDG_CONFIG_HOME"] = "/cfg"
		if got := s.confPath(); got != "/cfg/containers/containers.conf.d/50-codebridge.conf" {
			t.Errorf("user: %q", got)
		}
	}
	env["CONTAINERS_CONF"] = "/only/this.conf"
	if got := s.confPath(); got != "/only/this.conf" {
		t.Errorf("CONTAINERS_CONF: %q; want the file Podman reads alone", got)
	}
}

func TestBadFrom(t *testing.T) {
	err := Run(t.Context(), Options{From: "ftp"})
	if err == nil || !strings.Contains(err.Error(), "want auto, registry or debian") {
		t.Errorf("Run with --from ftp = %v", err)
	}
}
