package kube

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Config is where a Kubernetes API server answers and how to authenticate
// to it: what [LoadConfig] reads from a kubeconfig's current context or from
// a pod's service account.
type Config struct {
	Server    string // https://host:port, without a trailing slash
	Namespace string // the context's namespace; "" when it names none
	Context   string // the kubeconfig context, or "in-cluster"
	Source    string // the kubeconfig file, or the service account folder
	TLS       *tls.Config
	// Token returns the bearer token to send, "" for none. A service
	// account's token is read again as the kubelet rotates it.
	Token func() (string, error)
}

// Where a pod finds its service account, and the variables that say it runs
// in a cluster.
const (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	envServiceHost    = "KUBERNETES_SERVICE_HOST"
	envServicePort    = "KUBERNETES_SERVICE_PORT"
)

// ErrNoConfig is why [LoadConfig] found nothing to connect to.
var ErrNoConfig = errors.New("no Kubernetes configuration: set KUBECONFIG, write ~/.kube/config, or run codebridge in a pod")

// LoadConfig finds the cluster as kubectl does: the files KUBECONFIG lists
// (merged, the first file's value winning), else ~/.kube/config, and their
// current context; with neither, a pod's service account
// (KUBERNETES_SERVICE_HOST and the token, CA and namespace files). getenv
// is os.Getenv in production.
func LoadConfig(getenv func(string) string) (*Config, error) {
	if paths := kubeconfigPaths(getenv); len(paths) > 0 {
		return loadKubeconfig(paths)
	}
	if getenv(envServiceHost) != "" {
		return inCluster(getenv, serviceAccountDir)
	}
	return nil, ErrNoConfig
}

// kubeconfigPaths lists the kubeconfig files that exist: KUBECONFIG's (its
// list separator is the OS's), else ~/.kube/config.
func kubeconfigPaths(getenv func(string) string) []string {
	var paths []string
	if v := getenv("KUBECONFIG"); v != "" {
		for _, p := range filepath.SplitList(v) {
			if p != "" {
				paths = append(paths, p)
			}
		}
		return paths // named: a missing one is an error, as for kubectl
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return nil
	}
	p := filepath.Join(home, ".kube", "config")
	if _, err := os.Stat(p); err != nil {
		return nil
	}
	return []string{p}
}

// kubeconfig is the part of a kubeconfig file codebridge reads.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
			TLSServerName            string `yaml:"tls-server-name"`
			ProxyURL                 string `yaml:"proxy-url"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			ClientCertificate     string         `yaml:"client-certificate"`
			ClientCertificateData string         `yaml:"client-certificate-data"`
			ClientKey             string         `yaml:"client-key"`
			ClientKeyData         string         `yaml:"client-key-data"`
			Token                 string         `yaml:"token"`
			TokenFile             string         `yaml:"tokenFile"`
			Username              string         `yaml:"username"`
			Exec                  map[string]any `yaml:"exec"`
			AuthProvider          map[string]any `yaml:"auth-provider"`
		} `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster   string `yaml:"cluster"`
			User      string `yaml:"user"`
			Namespace string `yaml:"namespace"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

// named is an entry of a kubeconfig with the file it came from, whose folder
// relative paths in it are resolved against.
type named[T any] struct {
	v    T
	file string
}

// loadKubeconfig merges the files and resolves their current context.
func loadKubeconfig(paths []string) (*Config, error) {
	var (
		current  string
		clusters = map[string]named[int]{}
		users    = map[string]named[int]{}
		contexts = map[string]named[int]{}
		files    = map[string]*kubeconfig{}
	)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading kubeconfig %s (from KUBECONFIG): %w", p, err)
		}
		var kc kubeconfig
		if err := yaml.Unmarshal(data, &kc); err != nil {
			// Not %w: yaml lists every field of the wrong type, unbounded.
			return nil, fmt.Errorf("reading kubeconfig %s: %s", p, clip(err.Error()))
		}
		files[p] = &kc
		if current == "" {
			current = kc.CurrentContext
		}
		// The first file to name an entry wins, as kubectl merges them.
		for i, c := range kc.Clusters {
			if _, ok := clusters[c.Name]; !ok {
				clusters[c.Name] = named[int]{i, p}
			}
		}
		for i, u := range kc.Users {
			if _, ok := users[u.Name]; !ok {
				users[u.Name] = named[int]{i, p}
			}
		}
		for i, c := range kc.Contexts {
			if _, ok := contexts[c.Name]; !ok {
				contexts[c.Name] = named[int]{i, p}
			}
		}
	}
	where := strings.Join(paths, string(filepath.ListSeparator))
	if current == "" {
		return nil, fmt.Errorf("kubeconfig %s has no current-context: choose one with 'kubectl config use-context NAME'", where)
	}
	cx, ok := contexts[current]
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s: current-context %q is not among its contexts", where, clip(current))
	}
	ctx := files[cx.file].Contexts[cx.v].Context
	cl, ok := clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s: context %q names cluster %q, which it does not define", where, clip(current), clip(ctx.Cluster))
	}
	cluster := files[cl.file].Clusters[cl.v].Cluster
	cfg := &Config{Namespace: ctx.Namespace, Context: current, Source: where}

	u, err := url.Parse(cluster.Server)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("kubeconfig %s: cluster %q has server %q, want https://HOST:PORT", cl.file, clip(ctx.Cluster), clip(cluster.Server))
	}
	if cluster.ProxyURL != "" {
		return nil, fmt.Errorf("kubeconfig %s: cluster %q sets proxy-url, which codebridge does not support: reach the API server directly", cl.file, clip(ctx.Cluster))
	}
	cfg.Server = strings.TrimSuffix(cluster.Server, "/")
	cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cluster.TLSServerName, InsecureSkipVerify: cluster.InsecureSkipTLSVerify}
	if ca, err := pemData(cluster.CertificateAuthorityData, cluster.CertificateAuthority, cl.file); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: cluster %q's certificate authority: %w", cl.file, clip(ctx.Cluster), err)
	} else if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("kubeconfig %s: cluster %q's certificate authority holds no PEM certificate", cl.file, clip(ctx.Cluster))
		}
		cfg.TLS.RootCAs = pool
	}
	cfg.Token = func() (string, error) { return "", nil }

	if ctx.User == "" {
		return cfg, nil
	}
	us, ok := users[ctx.User]
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s: context %q names user %q, which it does not define", where, clip(current), clip(ctx.User))
	}
	user := files[us.file].Users[us.v].User
	switch {
	case user.Exec != nil:
		return nil, fmt.Errorf("kubeconfig %s: user %q authenticates through an exec plugin, which codebridge does not run: give it a token (a service account's, e.g. 'kubectl create token NAME') or a client certificate", us.file, clip(ctx.User))
	case user.AuthProvider != nil:
		return nil, fmt.Errorf("kubeconfig %s: user %q authenticates through an auth-provider, which codebridge does not support: give it a token or a client certificate", us.file, clip(ctx.User))
	case user.Username != "":
		return nil, fmt.Errorf("kubeconfig %s: user %q has a username and password, which codebridge does not support: give it a token or a client certificate", us.file, clip(ctx.User))
	}
	cert, err := pemData(user.ClientCertificateData, user.ClientCertificate, us.file)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: user %q's client certificate: %w", us.file, clip(ctx.User), err)
	}
	key, err := pemData(user.ClientKeyData, user.ClientKey, us.file)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: user %q's client key: %w", us.file, clip(ctx.User), err)
	}
	if (cert == nil) != (key == nil) {
		return nil, fmt.Errorf("kubeconfig %s: user %q has a client certificate or key without the other", us.file, clip(ctx.User))
	}
	if cert != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: user %q's client certificate: %w", us.file, clip(ctx.User), err)
		}
		cfg.TLS.Certificates = []tls.Certificate{pair}
	}
	switch {
	case user.Token != "":
		token := user.Token
		cfg.Token = func() (string, error) { return token, nil }
	case user.TokenFile != "":
		cfg.Token = fileToken(resolve(user.TokenFile, us.file))
	}
	return cfg, nil
}

// clip is s cut to at most maxQuoted bytes on a character boundary: a
// value of the file, or yaml's error, as an error quotes it.
func clip(s string) string {
	const maxQuoted = 200
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// pemData returns inline base64 data, else the file's content, else nil.
func pemData(inline, file, kubeconfig string) ([]byte, error) {
	if inline != "" {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(inline))
		if err != nil {
			return nil, fmt.Errorf("decoding its base64 data: %w", err)
		}
		return b, nil
	}
	if file == "" {
		return nil, nil
	}
	return os.ReadFile(resolve(file, kubeconfig))
}

// resolve makes a path in a kubeconfig relative to that file's folder, as
// kubectl does.
func resolve(path, kubeconfig string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(filepath.Dir(kubeconfig), path)
}

// inCluster is the configuration of a pod's service account in dir.
func inCluster(getenv func(string) string, dir string) (*Config, error) {
	host, port := getenv(envServiceHost), getenv(envServicePort)
	if port == "" {
		port = "443"
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("in a pod (KUBERNETES_SERVICE_HOST is set) without its service account's CA: %w; mount the service account token (automountServiceAccountToken)", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("the service account's CA %s holds no PEM certificate", filepath.Join(dir, "ca.crt"))
	}
	token := fileToken(filepath.Join(dir, "token"))
	if _, err := token(); err != nil {
		return nil, fmt.Errorf("in a pod without its service account's token: %w; mount the service account token (automountServiceAccountToken)", err)
	}
	ns, _ := os.ReadFile(filepath.Join(dir, "namespace"))
	return &Config{
		Server:    "https://" + joinHostPort(host, port),
		Namespace: strings.TrimSpace(string(ns)),
		Context:   "in-cluster",
		Source:    dir,
		TLS:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
		Token:     token,
	}, nil
}

func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// tokenRefresh is how long a token read from a file is used before the file
// is read again: the kubelet rotates a projected service account token well
// before it expires (after 80% of its hour).
const tokenRefresh = time.Minute

// fileToken returns a token read from path, read again after tokenRefresh.
func fileToken(path string) func() (string, error) {
	var (
		mu   sync.Mutex
		tok  string
		read time.Time
	)
	return func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if tok != "" && time.Since(read) < tokenRefresh {
			return tok, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		tok, read = strings.TrimSpace(string(b)), time.Now()
		return tok, nil
	}
}
