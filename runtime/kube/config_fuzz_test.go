package kube

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/restapi"
)

// maxConfigError bounds a kubeconfig error's length, not counting the
// file's path (which it names, maybe twice).
const maxConfigError = 1024

// secretValue finds the values of a kubeconfig's token and key data.
var secretValue = regexp.MustCompile(`(?m)(?:token|client-key-data)\s*:\s*["']?([^"'\s]{8,})`)

// FuzzLoadKubeconfig reads an arbitrary kubeconfig file. It never panics;
// an error is bounded in length and never quotes a token or a client key
// of the file (one that appears in it only as that value); a configuration
// read has an http or https server and hands out the token the user has.
func FuzzLoadKubeconfig(f *testing.F) {
	f.Add(`apiVersion: v1
current-context: c
contexts: [{name: c, context: {cluster: k, user: u, namespace: ns}}]
clusters: [{name: k, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: sekrit-token-0123456789}}]
`)
	f.Add(`current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://h:1", certificate-authority-data: "!!notbase64"}}]
users: [{name: u, user: {token: sekrit-token-0123456789, client-key-data: a2V5a2V5a2V5a2V5}}]
`)
	f.Add(`current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://h:1", insecure-skip-tls-verify: sekrit-token-0123456789}}]
users: [{name: u, user: {token: [sekrit-token-0123456789]}}]
`)
	f.Add("current-context: " + strings.Repeat("x", 5000) + "\n")
	f.Add("current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: [{name: k, cluster: {server: \"" + strings.Repeat("%zz", 2000) + "\"}}]\n")
	f.Add("token: sekrit-token-0123456789\n\t- x")
	f.Add("users:\n- name: u\n  user:\n    token: sekrit-token-0123456789\n    exec: {command: x}\ncurrent-context: c\n")
	f.Add("&a [*a, *a]")
	f.Fuzz(func(t *testing.T, doc string) {
		path := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadKubeconfig([]string{path})
		if err != nil {
			msg := strings.ReplaceAll(err.Error(), path, "")
			if len(msg) > maxConfigError {
				t.Fatalf("a %d-byte error, over %d: %.200s...", len(msg), maxConfigError, msg)
			}
			for _, m := range secretValue.FindAllStringSubmatch(doc, -1) {
				if s := m[1]; strings.Count(doc, s) == 1 && strings.Contains(msg, s) {
					t.Fatalf("the error %q quotes the secret %q", msg, s)
				}
			}
			return
		}
		if !strings.HasPrefix(cfg.Server, "https://") && !strings.HasPrefix(cfg.Server, "http://") {
			t.Fatalf("server %q", cfg.Server)
		}
		if cfg.Token == nil {
			t.Fatal("no Token func")
		}
	})
}

// FuzzReadError decodes an API server's error body. The message is the
// JSON "message" when there is one, else the body's text, at most 64 KiB of
// it; the StatusError built from it keeps its code and reads as an error.
func FuzzReadError(f *testing.F) {
	f.Add(`{"kind":"Status","message":"pods \"x\" not found","reason":"NotFound","code":404}`, 404)
	f.Add(`{"message":""}`, 500)
	f.Add(`{"message":1}`, 409)
	f.Add("plain text\n", 503)
	f.Add(strings.Repeat("x", 70<<10), 500)
	f.Add("\xff\xfe", 0)
	f.Fuzz(func(t *testing.T, body string, code int) {
		a := restapi.ReadError(&http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader(body))})
		if a.Code != code {
			t.Fatalf("code %d became %d", code, a.Code)
		}
		if len(a.Message) > 64<<10 || len(a.Reason) > 64<<10 {
			t.Fatalf("a message of %d bytes, a reason of %d", len(a.Message), len(a.Reason))
		}
		// The message is the body's text, or a string of the JSON object
		// the body is (encoding/json matches the key "message" in any case,
		// and decodes its escapes).
		read := body[:min(len(body), 64<<10)]
		fromJSON := false
		var doc map[string]any
		if json.Unmarshal([]byte(read), &doc) == nil {
			for _, v := range doc {
				fromJSON = fromJSON || v == a.Message
			}
		}
		if a.Message != strings.TrimSpace(read) && !fromJSON {
			t.Fatalf("message %q is neither the body's text nor a string of its JSON object", a.Message)
		}
		err := statusError("GET", "/api/v1/pods", a)
		if !isStatus(err, code) || !strings.HasPrefix(err.Error(), "kubernetes GET /api/v1/pods: ") {
			t.Fatalf("statusError = %v", err)
		}
	})
}
