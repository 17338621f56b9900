package kube

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCert returns a self-signed certificate and its key, PEM-encoded.
func testCert(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IsCA:         true,
		KeyUsage:     x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	cert, key := testCert(t)
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("ca.crt", string(cert))
	write("token", "file-token\n")
	certs := write("certs.yaml", `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:16443/
    certificate-authority-data: `+b64(cert)+`
users:
- name: admin
  user:
    client-certificate-data: `+b64(cert)+`
    client-key-data: `+b64(key)+`
contexts:
- name: ctx
  context: {cluster: c, user: admin, namespace: sandboxes}
current-context: ctx
`)
	files := write("files.yaml", `clusters:
- name: c
  cluster: {server: "https://k8s.example:6443", certificate-authority: ca.crt}
users:
- name: u
  user: {tokenFile: token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`)
	// Merged: the first file's current-context and entries win.
	other := write("other.yaml", `clusters:
- name: c
  cluster: {server: "https://other:1"}
users:
- name: t
  user: {token: inline-token}
contexts:
- name: y
  context: {cluster: c, user: t, namespace: ns-y}
current-context: y
`)
	execUser := write("exec.yaml", `clusters:
- name: c
  cluster: {server: "https://k8s.example"}
users:
- name: u
  user:
    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`)
	noCurrent := write("nocurrent.yaml", "clusters: []\n")

	tests := []struct {
		name              string
		kubeconfig        string
		server, ns, token string
		certs             int
		err               string
	}{
		{name: "client certificate", kubeconfig: certs, server: "https://127.0.0.1:16443", ns: "sandboxes", certs: 1},
		{name: "relative paths and a token file", kubeconfig: files, server: "https://k8s.example:6443", token: "file-token"},
		{name: "merged: the first current-context", kubeconfig: other + string(filepath.ListSeparator) + files, server: "https://other:1", ns: "ns-y", token: "inline-token"},
		{name: "exec plugin", kubeconfig: execUser, err: "exec plugin"},
		{name: "no current context", kubeconfig: noCurrent, err: "no current-context"},
		{name: "missing file", kubeconfig: filepath.Join(dir, "absent"), err: "reading kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig(env(map[string]string{"KUBECONFIG": tt.kubeconfig}))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tok, err := cfg.Token()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Server != tt.server || cfg.Namespace != tt.ns || tok != tt.token || len(cfg.TLS.Certificates) != tt.certs {
				t.Errorf("server %q, namespace %q, token %q, %d certificates; want %q, %q, %q, %d",
					cfg.Server, cfg.Namespace, tok, len(cfg.TLS.Certificates), tt.server, tt.ns, tt.token, tt.certs)
			}
		})
	}
}

func TestInCluster(t *testing.T) {
	cert, _ := testCert(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ca.crt"), cert, 0o600)
	os.WriteFile(filepath.Join(dir, "token"), []byte("sa-token"), 0o600)
	os.WriteFile(filepath.Join(dir, "namespace"), []byte("team-a\n"), 0o600)
	cfg, err := inCluster(env(map[string]string{envServiceHost: "fd00::1", envServicePort: "443"}), dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := cfg.Token()
	if cfg.Server != "https://[fd00::1]:443" || cfg.Namespace != "team-a" || tok != "sa-token" || cfg.TLS.RootCAs == nil {
		t.Errorf("in-cluster config %+v, token %q", cfg, tok)
	}
	if _, err := inCluster(env(map[string]string{envServiceHost: "10.0.0.1"}), t.TempDir()); err == nil || !strings.Contains(err.Error(), "automountServiceAccountToken") {
		t.Errorf("without a service account: %v", err)
	}
	if _, err := LoadConfig(env(map[string]string{"HOME": t.TempDir()})); err != ErrNoConfig {
		t.Errorf("nothing configured: %v, want ErrNoConfig", err)
	}
}
