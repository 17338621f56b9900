package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeContext writes a Docker context called name with this host into the
// config folder dir, as docker context create does.
func writeContext(t *testing.T, dir, name, host string) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	meta := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	data := `{"Name":"` + name + `","Metadata":{},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
	if err := os.WriteFile(filepath.Join(meta, "meta.json"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestExplicitEndpoint(t *testing.T) {
	cfg := t.TempDir()
	writeContext(t, cfg, "remote", "tcp://10.0.0.9:2375")
	writeContext(t, cfg, "desktop", "unix:///home/u/.docker/desktop/docker.sock")
	current := t.TempDir()
	writeContext(t, current, "desktop", "unix:///home/u/.docker/desktop/docker.sock")
	if err := os.WriteFile(filepath.Join(current, "config.json"), []byte(`{"currentContext": "desktop"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	defaultCurrent := t.TempDir()
	if err := os.WriteFile(filepath.Join(defaultCurrent, "config.json"), []byte(`{"currentContext": "default"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		host       string
		env        map[string]string
		wantHost   string
		wantChosen bool
		wantErr    string
	}{
		{name: "nothing set", env: map[string]string{"DOCKER_CONFIG": t.TempDir()}},
		{name: "configured host wins", host: "unix:///x.sock", env: map[string]string{"DOCKER_HOST": "tcp://h:1"}, wantHost: "unix:///x.sock", wantChosen: true},
		{name: "DOCKER_HOST", env: map[string]string{"DOCKER_HOST": "tcp://h:1", "DOCKER_CONTEXT": "remote", "DOCKER_CONFIG": cfg}, wantHost: "tcp://h:1", wantChosen: true},
		{name: "DOCKER_CONTEXT", env: map[string]string{"DOCKER_CONTEXT": "remote", "DOCKER_CONFIG": cfg}, wantHost: "tcp://10.0.0.9:2375", wantChosen: true},
		{name: "current context", env: map[string]string{"DOCKER_CONFIG": current}, wantHost: "unix:///home/u/.docker/desktop/docker.sock", wantChosen: true},
		{name: "default context", env: map[string]string{"DOCKER_CONFIG": defaultCurrent}},
		{name: "DOCKER_CONTEXT=default", env: map[string]string{"DOCKER_CONTEXT": "default", "DOCKER_CONFIG": current}},
		{name: "missing context", env: map[string]string{"DOCKER_CONTEXT": "gone", "DOCKER_CONFIG": cfg}, wantChosen: true, wantErr: `Docker context "gone" (from DOCKER_CONTEXT): no such context`},
		{name: "TLS without certificates", env: map[string]string{"DOCKER_HOST": "tcp://h:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": t.TempDir()}, wantHost: "tcp://h:2376", wantChosen: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ep, chosen, err := explicitEndpoint(tt.host, func(k string) string { return tt.env[k] })
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrUnavailable) {
				t.Errorf("error %v does not match ErrUnavailable", err)
			}
			if chosen != tt.wantChosen || ep.Host != tt.wantHost {
				t.Errorf("endpoint %q (chosen %v), want %q (chosen %v)", ep.Host, chosen, tt.wantHost, tt.wantChosen)
			}
		})
	}
}

// TestPresent: Docker counts as present for auto with an endpoint set or a
// socket on disk, and not with the docker command alone (a CLI with no daemon,
// as brand-new build machines have it).
func TestPresent(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	sock := filepath.Join(dir, "docker.sock")
	env := func(kv ...string) func(string) string {
		m := map[string]string{"DOCKER_CONFIG": dir}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	if present(env(), []string{sock}) {
		t.Error("present with only the docker command and no socket")
	}
	if !present(env("DOCKER_HOST", "tcp://127.0.0.1:2375"), []string{sock}) {
		t.Error("not present with DOCKER_HOST set")
	}
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !present(env(), []string{sock}) {
		t.Error("not present with a socket on disk")
	}
}

func TestParseHost(t *testing.T) {
	for _, tt := range []struct{ host, scheme, addr, err string }{
		{"unix:///var/run/docker.sock", "unix", "/var/run/docker.sock", ""},
		{"tcp://10.0.0.1", "tcp", "10.0.0.1:2375", ""},
		{"tcp://h:2376", "tcp", "h:2376", ""},
		{"ssh://me@h:2222", "ssh", "ssh://me@h:2222", ""},
		{"npipe:////./pipe/docker_engine", "", "", "named pipes"},
		{"http://h", "", "", "want unix://, tcp:// or ssh://"},
		{"unix://", "", "", "names no socket"},
	} {
		scheme, addr, err := parseHost(tt.host)
		if scheme != tt.scheme || addr != tt.addr || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("parseHost(%q) = %q, %q, %v; want %q, %q, %q", tt.host, scheme, addr, err, tt.scheme, tt.addr, tt.err)
		}
	}
}

// TestConnectUnavailable: a daemon that does not answer is an error that
// says where it was looked for and how to start Docker.
func TestConnectUnavailable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	env := map[string]string{"DOCKER_HOST": "unix://" + sock}
	_, err := Connect(t.Context(), Options{Getenv: func(k string) string { return env[k] }})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Docker not reachable at unix://"+sock+" (from DOCKER_HOST)") ||
		!strings.Contains(err.Error(), StartHint) {
		t.Errorf("Connect to nothing: %v", err)
	}
}

func TestVersionLess(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{{"1.40", "1.41", true}, {"1.41", "1.41", false}, {"1.9", "1.10", true}, {"1.43", "1.41", false}, {"2.0", "1.99", false}} {
		if got := versionLess(tt.a, tt.b); got != tt.want {
			t.Errorf("versionLess(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}
