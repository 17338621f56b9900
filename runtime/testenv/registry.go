package testenv

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Registry serves image, exported from the local Podman, from a read-only
// container registry on 127.0.0.1 for the duration of t, and returns the
// reference to pull it by (127.0.0.1:PORT/codebridge-test/NAME:test). Tests of
// pulling need it: these machines reach no public registry. It speaks just
// enough of the OCI distribution API for a pull: /v2/, manifests by tag or
// digest, blobs. Unless gate is nil, requests for manifests and blobs wait
// until gate is closed, so a test can hold a pull in progress.
func Registry(t testing.TB, image string, gate <-chan struct{}) string {
	t.Helper()
	podman := RequirePodmanBinary(t)
	dir := t.TempDir()
	if out, err := exec.Command(podman, "push", "--quiet", image, "oci:"+dir+":test").CombinedOutput(); err != nil {
		Missing(t, "image "+image+" to serve from a test registry", strings.TrimSpace(string(out)))
	}
	var index struct {
		Manifests []struct {
			MediaType   string            `json:"mediaType"`
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err == nil {
		err = json.Unmarshal(raw, &index)
	}
	if err != nil || len(index.Manifests) == 0 {
		t.Fatalf("reading the OCI layout of %s: %v", image, err)
	}
	manifest := index.Manifests[0]

	blob := func(w http.ResponseWriter, r *http.Request, digest, mediaType string) {
		algo, hex, ok := strings.Cut(digest, ":")
		if !ok || algo != "sha256" || strings.ContainsAny(hex, "/.") {
			http.NotFound(w, r)
			return
		}
		f, err := os.Open(filepath.Join(dir, "blobs", algo, hex))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", mediaType)
		w.Header().Set("Docker-Content-Digest", digest)
		http.ServeContent(w, r, "", time.Time{}, f)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/", func(w http.ResponseWriter, r *http.Request) {
		rest := strings.TrimPrefix(r.URL.Path, "/v2/")
		if rest != "" && gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		switch name, ref, ok := cutLast(rest, "/manifests/"); {
		case rest == "":
			w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
			w.Write([]byte("{}"))
		case ok && strings.HasPrefix(name, "codebridge-test/") && (ref == "test" || ref == manifest.Digest):
			blob(w, r, manifest.Digest, manifest.MediaType)
		default:
			if _, digest, ok := cutLast(rest, "/blobs/"); ok {
				blob(w, r, digest, "application/octet-stream")
				return
			}
			http.NotFound(w, r)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	name := filepath.Base(strings.SplitN(image, ":", 2)[0])
	return ln.Addr().String() + "/codebridge-test/" + name + ":test"
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
