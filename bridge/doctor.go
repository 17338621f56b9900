package bridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// Finding levels of [Listing.Doctor].
const (
	FindOK   = "ok"
	FindWarn = "warn"
	FindFail = "FAIL"
)

// Finding is one check's result: what was checked, what was found and, for a
// problem, how to fix it.
type Finding struct {
	Level, Check, Detail, Fix string
}

// Doctor checks what codebridge needs, in the order a run needs it, and
// reports each finding, one at a time, with the fix for each problem: the
// container engine reachable, the sandbox image present, a sandbox
// container running Python with codebridge's limits, the config folder and
// every server file, every server starting and listing its tools, and the
// state directory. [Listing.Close] stops what it started.
func (l *Listing) Doctor(ctx context.Context, report func(Finding)) {
	// The sandbox and the servers are independent: check them side by side,
	// the sandbox's findings first.
	var servers []Finding
	var wg sync.WaitGroup
	wg.Go(func() { servers = l.doctorServers(ctx) })
	for _, f := range l.doctorSandbox(ctx) {
		report(f)
	}
	wg.Wait()
	for _, f := range servers {
		report(f)
	}
	report(doctorStateDir(l.cfg))
}

// doctorSandbox checks the container engine, the image and a sandbox
// container.
func (l *Listing) doctorSandbox(ctx context.Context) []Finding {
	cfg, logger := l.cfg, l.logger
	// The container has everything a run has (the limits, the seccomp
	// profile, the helper module and code sent over the sandbox's stream),
	// without warm containers, sessions or preloads.
	cfg.WarmSandboxes, cfg.Sessions, cfg.Preload = 0, false, nil
	eng, err := newEngine(cfg, logger)
	if err != nil {
		return []Finding{{FindFail, "engine", err.Error(), ""}}
	}
	m := newSandbox(cfg, eng, l.state.memory, logger, sandboxHooks{})
	l.stopFirst(func(ctx context.Context) error {
		return errors.Join(eng.Close(ctx), m.Close(ctx)) // the engine first, as in App.Shutdown
	})

	start := time.Now()
	info, err := eng.Describe(ctx)
	check := strings.ToLower(info.Name)
	if err != nil {
		return []Finding{
			{FindFail, check, err.Error(), info.Fix},
			{FindFail, "sandbox", "not checked: it needs " + info.Name, ""},
		}
	}
	var out []Finding
	out = append(out, Finding{FindOK, check, fmt.Sprintf("%s %s at %s (%s), answered in %s", info.Name, info.Version, info.Endpoint, info.Via, since(start)), ""})

	img := cfg.Image
	if img == "" {
		img = confine.DefaultImage
	}
	ok, err := eng.HasImage(ctx, img)
	switch {
	case err != nil:
		out = append(out, Finding{FindFail, "image", err.Error(), "check that " + info.Name + " works: " + check + " images"})
	case !ok && cfg.Image != "":
		out = append(out, Finding{FindFail, "image", img + " (MCP_BRIDGE_IMAGE) is not there; the first run would try to pull it",
			info.Setup + " --image " + img + ", or set MCP_BRIDGE_IMAGE to an image with python3"})
	case !ok:
		out = append(out, Finding{FindFail, "image", img + " is not there; the first run would pull " + confine.FallbackImage + " instead, without the data libraries",
			info.Setup + " builds it"})
	default:
		out = append(out, Finding{FindOK, "image", img, ""})
	}
	if !ok {
		return append(out, Finding{FindFail, "sandbox", "not checked: it needs the image", ""})
	}

	start = time.Now()
	res, err := explainedRun(ctx, m, sandbox.Request{
		Program: python.Program{Code: kernelProbe, OutputLimit: cfg.OutputLimit},
		Host:    func(sandbox.SessionInfo) python.Host { return protocol.Server{Handler: host.NoServers} }, Timeout: cfg.Timeout,
	})
	switch {
	case err != nil:
		out = append(out, Finding{FindFail, "sandbox", err.Error(), ""})
	case res.Error != nil:
		out = append(out, Finding{FindFail, "sandbox", "a sandbox container did not run Python: " + res.Error.Message,
			info.Setup + " probes a container (and fixes Podman's runtime and rlimit defaults where that fails)"})
	default:
		first, kernel, _ := strings.Cut(strings.TrimSpace(res.Stdout), "\n")
		version, stream, _ := strings.Cut(strings.TrimPrefix(first, "ok "), " ")
		over := "over " + info.Name + "'s attach stream"
		if stream == "socket" {
			over = "over a unix socket"
		}
		out = append(out, Finding{FindOK, "sandbox", fmt.Sprintf("a container with codebridge's limits ran Python %s in %s, %s", version, since(start), over), ""})
		if stream != "socket" && cfg.SocketStream && info.SharesFiles {
			out = append(out, Finding{FindWarn, "sandbox", "the sandbox did not use its unix socket, so tool calls go through " + info.Name + "'s relay and are slower; codebridge's log (stderr) says why",
				"on an SELinux host, set MCP_BRIDGE_SANDBOX_STREAM=attach; otherwise check that the state directory is yours and not writable by others"})
		}
		out = append(out, doctorRuntime(cfg.Runtime, info, kernel))
		if info.Name == "Kubernetes" {
			res, err := explainedRun(ctx, m, sandbox.Request{
				Program: python.Program{Code: egressProbe, OutputLimit: cfg.OutputLimit},
				Host:    func(sandbox.SessionInfo) python.Host { return protocol.Server{Handler: host.NoServers} }, Timeout: cfg.Timeout,
			})
			if err == nil && res.Error != nil {
				err = errors.New(res.Error.Message)
			}
			out = append(out, egressFinding(res.Stdout, err))
		}
	}
	return out
}

// egressProbe is the code of doctor's network check on Kubernetes: it tries
// to connect to the cloud metadata address, a public address and the API
// server's service, at once, and prints "open ADDR" for each it connected
// to or "closed ADDR WHY" (a refusal counts as closed: a network plugin may
// enforce a policy by rejecting).
const egressProbe = `import os, socket, threading
targets = [('169.254.169.254', 80), ('1.1.1.1', 443)]
h, p = os.environ.get('KUBERNETES_SERVICE_HOST'), os.environ.get('KUBERNETES_SERVICE_PORT')
if h and p and p.isdigit():
    targets.append((h, int(p)))
lines = []
def probe(t):
    try:
        socket.create_connection(t, timeout=3).close()
        r = 'open'
    except OSError as e:
        r = 'closed %s' % type(e).__name__
    lines.append('%s %s:%d' % (r.split()[0], t[0], t[1]) + (' ' + r.split()[1] if ' ' in r else ''))
ts = [threading.Thread(target=probe, args=(t,)) for t in targets]
for t in ts: t.start()
for t in ts: t.join()
print('\n'.join(sorted(lines)))`

// egressFinding reports egressProbe's output: a sandbox pod that reached any
// address means the NetworkPolicy is not enforced.
func egressFinding(stdout string, err error) Finding {
	if err != nil {
		return Finding{FindFail, "network", "the egress probe did not run in a sandbox pod: " + oneLine(err.Error()), ""}
	}
	var open, closed []string
	for line := range strings.Lines(stdout) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "open":
			open = append(open, f[1])
		case len(f) >= 2 && f[0] == "closed":
			closed = append(closed, f[1])
		}
	}
	switch {
	case len(open) > 0:
		return Finding{FindFail, "network", "a sandbox pod reached " + strings.Join(open, ", ") + ": the NetworkPolicy codebridge-sandbox-deny-all is not enforced, so code can reach the network (cloud metadata, the API server)",
			"use a network plugin that enforces NetworkPolicies (Calico, Cilium; flannel alone does not), and check that no other NetworkPolicy in the namespace allows traffic to pods labelled " + confine.LabelManaged + "=true"}
	case len(closed) == 0:
		return Finding{FindFail, "network", "the egress probe printed nothing a sandbox pod could or could not reach: " + oneLine(stdout), ""}
	}
	return Finding{FindOK, "network", "a sandbox pod reached none of " + strings.Join(closed, ", "), ""}
}

// kernelProbe is the code of doctor's sandbox run: Python's version and the
// stream, then the kernel the sandbox sees: its release and the first line
// of its log, which gVisor lets code read ("Starting gVisor...") and Linux
// does not.
const kernelProbe = `import ctypes, os, sys, codebridge_runner
print('ok', sys.version.split()[0], codebridge_runner.STREAM)
log = ''
try:
    buf = ctypes.create_string_buffer(4096)
    n = ctypes.CDLL(None).klogctl(3, buf, len(buf))  # SYSLOG_ACTION_READ_ALL
    log = buf.raw[:max(n, 0)].decode(errors='replace').split('\n')[0].split('] ', 1)[-1]
except Exception:
    pass
print(os.uname().release, log)`

// doctorRuntime reports the OCI runtime the sandbox ran under and what its
// kernel said (kernelProbe's last line: the release, then the first line of
// the kernel's log, if code may read it).
func doctorRuntime(asked string, info enginekit.Description, kernel string) Finding {
	release, log, _ := strings.Cut(strings.TrimSpace(kernel), " ")
	gvisor := strings.Contains(log, "gVisor")
	name := cmp.Or(info.Runtime, "the engine's default runtime")
	switch {
	case gvisor && (confine.GVisor(asked) || info.Name == "Docker" && confine.GVisor(info.Runtime)):
		// Docker's driver takes a default runtime runsc as asked for.
		return Finding{FindOK, "runtime", fmt.Sprintf("%s: the sandbox runs on gVisor's kernel, not this host's (its log begins %q; uname says %s)", name, log, release), ""}
	case confine.GVisor(asked):
		return Finding{FindFail, "runtime", fmt.Sprintf("MCP_BRIDGE_RUNTIME=%s, but the sandbox ran on this host's Linux %s, not on gVisor (runtime %s)", asked, release, name),
			"codebridge setup --runtime runsc registers gVisor with " + info.Name + "; with CONTAINER_HOST set, that service must run it"}
	case gvisor:
		return Finding{FindWarn, "runtime", fmt.Sprintf("%s runs the sandbox on gVisor (its log begins %q), but MCP_BRIDGE_RUNTIME does not say so, and the sandbox's limits and seccomp profile are Linux's", name, log),
			"set MCP_BRIDGE_RUNTIME=runsc"}
	}
	return Finding{FindOK, "runtime", fmt.Sprintf("%s: the sandbox shares this host's Linux kernel (%s); MCP_BRIDGE_RUNTIME=runsc puts gVisor's between them", name, release), ""}
}

// doctorServers checks the config folder, every server file and every
// enabled server, which it starts (all at once) and asks for its tools.
func (l *Listing) doctorServers(ctx context.Context) []Finding {
	cfg := l.cfg
	if _, err := os.ReadDir(cfg.ConfigDir); errors.Is(err, os.ErrNotExist) {
		return []Finding{{FindWarn, "config", cfg.ConfigDir + " does not exist, so no MCP server is configured",
			"create it and add a JSON file with an \"mcpServers\" object (see the README's Configure servers)"}}
	} else if err != nil {
		return []Finding{{FindFail, "config", err.Error(), "make the folder readable, or set MCP_BRIDGE_CONFIG_DIR"}}
	}
	conf := l.conf
	var out []Finding
	files := map[string]bool{}
	for _, s := range conf.Servers {
		files[s.Source] = true
	}
	out = append(out, Finding{FindOK, "config", fmt.Sprintf("%s: %s, %s", cfg.ConfigDir, plural(len(files), "file"), plural(len(conf.Servers), "server")), ""})
	for _, p := range conf.Problems {
		level := FindFail
		if p.Warning {
			level = FindWarn
		}
		out = append(out, Finding{level, "config file", settings.ExplainProblem(p).String(), "edit " + filepath.Base(p.Path) + " as the message says"})
	}

	signIn := l.SignIns()
	p := l.pool
	p.Update(conf.Servers)
	results := make([]Finding, len(conf.Servers))
	var wg sync.WaitGroup
	for i, s := range conf.Servers {
		check := "server " + s.Name
		if s.Disabled {
			results[i] = Finding{FindOK, check, "disabled in " + s.Source, ""}
			continue
		}
		wg.Go(func() {
			start := time.Now()
			tctx, cancel := context.WithTimeout(ctx, ListTimeout)
			defer cancel()
			tools, err := p.Tools(tctx, s.Name)
			if isAuthRequired(err) {
				results[i] = Finding{FindFail, check, "needs a sign-in: " + signIn[s.Name], "run codebridge login " + s.Name}
				return
			}
			if err != nil {
				results[i] = Finding{FindFail, check, fmt.Sprintf("did not list its tools (%s): %s", since(start), oneLine(err.Error())),
					"check its entry in " + s.Source + "; run its command by hand to see it start"}
				return
			}
			detail := fmt.Sprintf("%s, listed in %s", plural(len(tools), "tool"), since(start))
			if st, ok := signIn[s.Name]; ok {
				detail += "; " + st
			}
			results[i] = Finding{FindOK, check, detail, ""}
		})
	}
	wg.Wait()
	sort.SliceStable(results, func(a, b int) bool { return results[a].Check < results[b].Check })
	return append(out, results...)
}

// doctorStateDir checks that the state directory is this user's alone and can be written.
func doctorStateDir(cfg settings.Config) Finding {
	dir := cfg.StateDir
	if err := confine.OwnDir(dir); err != nil {
		return Finding{FindFail, "state", err.Error(), "fix it as it says, or set MCP_BRIDGE_STATE_DIR to a private folder of your own"}
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return Finding{FindFail, "state", err.Error(), "set MCP_BRIDGE_STATE_DIR to a folder codebridge can write"}
	}
	f.Close()
	os.Remove(f.Name())
	return Finding{FindOK, "state", dir + " is writable", ""}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func since(t time.Time) string {
	d := time.Since(t)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
