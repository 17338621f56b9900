package docker

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
)

// endpoint is a Docker API to connect to.
type endpoint struct {
	Host string      // unix:///path, tcp://host:port, ssh://[user@]host[:port]
	TLS  *tls.Config // for tcp://; nil means plain HTTP
	from string      // where it came from, for messages
}

// explicitEndpoint returns the Docker the user chose, if any: the
// configured host, else $DOCKER_HOST, else the current Docker context
// ($DOCKER_CONTEXT, else the config's currentContext) unless it is
// "default". The second result is false when none was chosen.
func explicitEndpoint(host string, getenv func(string) string) (endpoint, bool, error) {
	switch {
	case host != "":
		ep, err := withTLS(endpoint{Host: host, from: "the configured host"}, getenv)
		return ep, true, err
	case getenv("DOCKER_HOST") != "":
		ep, err := withTLS(endpoint{Host: getenv("DOCKER_HOST"), from: "DOCKER_HOST"}, getenv)
		return ep, true, err
	}
	name, from := getenv("DOCKER_CONTEXT"), "DOCKER_CONTEXT"
	if name == "" {
		name, from = currentContext(getenv), "the current Docker context ("+filepath.Join(configDir(getenv), "config.json")+")"
	}
	if name == "" || name == "default" {
		return endpoint{}, false, nil
	}
	ep, err := contextEndpoint(name, getenv)
	if err != nil {
		return endpoint{}, true, unavailable(err, "Docker context %q (from %s): %v: see docker context ls, or set DOCKER_HOST", name, from, err)
	}
	ep.from = fmt.Sprintf("Docker context %q (from %s)", name, from)
	return ep, true, nil
}

// configDir is Docker's configuration folder: $DOCKER_CONFIG, else ~/.docker.
func configDir(getenv func(string) string) string {
	if d := getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".docker")
}

// currentContext is the currentContext of Docker's config.json, "" when
// none is set or the file cannot be read.
func currentContext(getenv func(string) string) string {
	data, err := os.ReadFile(filepath.Join(configDir(getenv), "config.json"))
	if err != nil {
		return ""
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		return ""
	}
	return cfg.CurrentContext
}

// contextEndpoint reads the Docker endpoint of the context called name from
// contexts/meta/<sha256 of name>/meta.json, with its TLS material from
// contexts/tls/<same>/docker when present.
func contextEndpoint(name string, getenv func(string) string) (endpoint, error) {
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	dir := filepath.Join(configDir(getenv), "contexts")
	data, err := os.ReadFile(filepath.Join(dir, "meta", id, "meta.json"))
	if err != nil {
		return endpoint{}, fmt.Errorf("no such context: %w", err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host          string
			SkipTLSVerify bool
		}
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return endpoint{}, fmt.Errorf("reading its meta.json: %w", err)
	}
	d, ok := meta.Endpoints["docker"]
	if !ok || d.Host == "" {
		return endpoint{}, errors.New("it has no docker endpoint")
	}
	ep := endpoint{Host: d.Host}
	tlsDir := filepath.Join(dir, "tls", id, "docker")
	if _, err := os.Stat(tlsDir); err == nil || d.SkipTLSVerify {
		ep.TLS, err = tlsConfig(tlsDir, !d.SkipTLSVerify)
		if err != nil {
			return endpoint{}, err
		}
	}
	return ep, nil
}

// withTLS adds the TLS settings of DOCKER_TLS_VERIFY and DOCKER_CERT_PATH
// to a tcp:// endpoint, as the docker CLI reads them: TLS with the
// certificates of DOCKER_CERT_PATH (else ~/.docker), verifying the daemon's
// certificate when DOCKER_TLS_VERIFY is set.
func withTLS(ep endpoint, getenv func(string) string) (endpoint, error) {
	if !strings.HasPrefix(ep.Host, "tcp://") {
		return ep, nil
	}
	verify := getenv("DOCKER_TLS_VERIFY") != ""
	certs := getenv("DOCKER_CERT_PATH")
	if !verify && certs == "" {
		return ep, nil
	}
	if certs == "" {
		certs = configDir(getenv)
	}
	cfg, err := tlsConfig(certs, verify)
	if err != nil {
		return ep, unavailable(err, "TLS for %s (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH): %v", ep.Host, err)
	}
	ep.TLS = cfg
	return ep, nil
}

// tlsConfig reads ca.pem, cert.pem and key.pem from dir, each optional.
func tlsConfig(dir string, verify bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !verify}
	if ca, err := os.ReadFile(filepath.Join(dir, "ca.pem")); err == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%s holds no certificate", filepath.Join(dir, "ca.pem"))
		}
		cfg.RootCAs = pool
	} else if verify && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if _, err := os.Stat(cert); err == nil {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("loading the client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// defaultSockets are where Docker listens when no host is chosen, in order:
// rootless Docker, Docker Desktop's socket (macOS, and Linux), and the
// system daemon.
func defaultSockets(getenv func(string) string) []string {
	var socks []string
	if dir := getenv("XDG_RUNTIME_DIR"); dir != "" {
		socks = append(socks, filepath.Join(dir, "docker.sock"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		socks = append(socks, filepath.Join(home, ".docker", "run", "docker.sock"))
		if goruntime.GOOS == "linux" {
			socks = append(socks, filepath.Join(home, ".docker", "desktop", "docker.sock"))
		}
	}
	return append(socks, "/var/run/docker.sock")
}

// parseHost checks a Docker host URI and returns its scheme and address: a
// socket path for unix, host:port for tcp, the ssh URL itself for ssh.
func parseHost(host string) (scheme, addr string, err error) {
	u, err := url.Parse(host)
	if err != nil {
		return "", "", fmt.Errorf("%q is not a Docker host URI: %w", host, err)
	}
	switch u.Scheme {
	case "unix":
		if u.Path == "" {
			return "", "", fmt.Errorf("%q names no socket", host)
		}
		return "unix", u.Path, nil
	case "tcp":
		if u.Host == "" {
			return "", "", fmt.Errorf("%q names no host", host)
		}
		addr = u.Host
		if u.Port() == "" {
			addr += ":2375"
		}
		return "tcp", addr, nil
	case "ssh":
		if u.Host == "" {
			return "", "", fmt.Errorf("%q names no host", host)
		}
		return "ssh", host, nil
	case "npipe":
		return "", "", fmt.Errorf("%q: named pipes (Docker on Windows) are not supported; run codebridge in WSL with Docker Desktop's WSL integration", host)
	}
	return "", "", fmt.Errorf("%q: want unix://, tcp:// or ssh://", host)
}

// Present reports, without connecting, whether a Docker daemon looks
// reachable here: DOCKER_HOST or a Docker context is set, or a default
// socket exists. The docker command alone does not count: without a socket
// it has no daemon to talk to, as on machines that ship the CLI and nothing
// else, where auto's choice (and so codebridge setup's) is then Podman.
func Present(getenv func(string) string) bool {
	return present(getenv, defaultSockets(getenv))
}

func present(getenv func(string) string, sockets []string) bool {
	if _, chosen, _ := explicitEndpoint("", getenv); chosen {
		return true
	}
	for _, sock := range sockets {
		if _, err := os.Stat(sock); err == nil {
			return true
		}
	}
	return false
}
