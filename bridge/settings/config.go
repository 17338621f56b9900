package settings

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"go/token"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// Container engines of the engine setting ([Config.Engine]).
const (
	EngineAuto       = "auto"       // Podman where it is installed or answers, else Docker
	EnginePodman     = "podman"     // runtime/podman
	EngineDocker     = "docker"     // runtime/docker
	EngineKubernetes = "kubernetes" // runtime/kube: each sandbox a pod
)

// EnvPrefix starts every environment variable codebridge reads. The names match
// the reference Python bridge's, so users can switch without editing configs.
const EnvPrefix = "MCP_BRIDGE_"

// Config is codebridge's settings, resolved once at start-up by [Load]: a
// snapshot, passed by value and never edited after it is made (a command-line
// flag is a layer of Load, not an edit afterwards); new settings make a new
// Config.
type Config struct {
	Engine         string        // container engine: EngineAuto, EnginePodman, EngineDocker or EngineKubernetes
	K8sNamespace   string        // the namespace of the sandbox pods; "" the kubeconfig context's
	K8sSeccomp     string        // a Localhost seccomp profile for the sandbox pods; "" RuntimeDefault
	K8sWarmPool    string        // an agent-sandbox SandboxWarmPool to claim sandboxes from; "" codebridge creates its pods
	Image          string        // sandbox image; empty picks localhost/codebridge-sandbox, then python:3.12-slim
	Timeout        time.Duration // default run_python time limit
	MaxTimeout     time.Duration // upper bound for a caller's timeout
	Memory         int64         // container memory limit in bytes (no extra swap)
	Pids           int64         // container pids limit
	CPUs           float64       // container CPU limit; 0 means none
	ContainerUser  string        // uid:gid inside the container
	StateDir       string        // private runtime state (e.g. a spawned Podman socket)
	LogLevel       slog.Level    // stderr log level
	ConfigDir      string        // folder of *.json MCP server configs
	OutputLimit    int           // per-stream output cap in bytes
	MaxCodeSize    int           // largest accepted code, in bytes
	MaxArgSize     int           // largest arguments of one downstream tool call, in bytes
	MaxAttachment  int           // largest image or file one run returns, in bytes
	MaxAttachN     int           // images and files one run returns, at most
	MaxAttachSum   int           // bytes of images and files one run returns, at most
	AllowSelf      bool          // allow configs that launch codebridge itself
	ServerIdle     time.Duration // stop a downstream server unused this long; 0 never
	WarmSandboxes  int           // containers kept started ahead of time; WarmAuto lets [Config.Warm] decide
	Sessions       bool          // keep each MCP session's interpreter between runs
	SocketStream   bool          // sandboxes talk through a unix socket where the engine can mount one
	Runtime        string        // OCI runtime sandboxes run under, e.g. runsc; "" is the engine's default
	SessionIdle    time.Duration // end a sandbox session unused this long; 0 never
	MaxSessions    int           // live sandbox sessions (each holding a container) at most
	Preload        []string      // modules a session's interpreter imports before its first run
	MaxRuns        int           // runs executing in sandboxes at once, at most; more wait for a slot
	MaxQueued      int           // run_python calls in progress or waiting (their session's turn, a slot) at once, at most
	MaxMCPSessions int           // MCP sessions open at once over HTTP, at most, with or without a sandbox

	HTTP          string        // address to serve MCP over HTTP on; "" serves stdio
	HTTPToken     secret.Value  // bearer token HTTP clients send; empty generates one in StateDir
	HTTPAuth      bool          // require the bearer token; false is allowed on loopback only
	HTTPOrigins   []string      // browser origins allowed besides loopback ones
	ShutdownGrace time.Duration // how long runs in progress may finish when an HTTP server stops
	// Tools is the tool policy of every server, which a server's entry
	// refines (MCP_BRIDGE_TOOLS_ALLOW, _TOOLS_DENY, _READ_ONLY,
	// _TOOLS_CONFIRM, _TOOLS_CONFIRM_WRITES).
	Tools         discovery.ToolPolicy
	Audit         bool  // record every tool call made from code in the audit log
	AuditContents bool  // also record the calls' arguments and results
	AuditMaxSize  int64 // rotate the audit log at this size, in bytes
	AuditKeep     int   // rotated audit logs kept
	QuarantineNew bool  // hold back tools without a pinned definition until approved
	// ConfirmSaveTool asks the person before code saves a helper with
	// save_tool, which every later session then defines.
	ConfirmSaveTool bool
	// OAuthClientMetadataURL is the Client ID Metadata Document codebridge
	// login signs in as where an authorization server supports them; ""
	// registers instead.
	OAuthClientMetadataURL string
}

// A setting is one row of the settings table: its key in the settings file
// (and, upper-cased after [EnvPrefix], its environment variable), its default,
// its help on the generated docs/settings.md, and how its text sets [Config].
type setting struct {
	key    string // lower-case name, e.g. "max_timeout": the file key; MCP_BRIDGE_MAX_TIMEOUT in the environment
	def    string
	help   string // Markdown, for docs/settings.md
	apply  func(c *Config, v string) error
	flag   string                // the command-line flag that sets it, if any, e.g. "http"
	secret bool                  // its value is never shown
	unset  func(c Config) string // the value used when it is empty, where that depends on the machine or other settings (c has every other one)
}

// settings is the table behind [LoadConfig] and the README's settings table.
var settings = []setting{
	{key: "engine", def: EngineAuto, help: "The container engine sandboxes run on: podman, docker, kubernetes (each sandbox a pod on the cluster KUBECONFIG's current context names, or the one codebridge runs in; see [Kubernetes](kubernetes.md)), or auto (Podman where it is installed or answers, else Docker). Docker is found as its CLI finds it: DOCKER_HOST, the current Docker context, rootless Docker's socket, Docker Desktop's, /var/run/docker.sock. See [Engines](engines.md).",
		apply: func(c *Config, v string) error {
			switch v {
			case EngineAuto, EnginePodman, EngineDocker, EngineKubernetes:
				c.Engine = v
				return nil
			}
			return errors.New("want auto, podman, docker or kubernetes")
		}},
	{key: "k8s_namespace", def: "", help: "With engine kubernetes, the namespace of the sandbox pods. Unset: the namespace of KUBECONFIG's current context, or of the pod codebridge runs in, else default.",
		apply: func(c *Config, v string) error {
			if v != "" && !validNamespace(v) {
				return errors.New("want a Kubernetes namespace name: lower-case letters, digits and '-', at most 63")
			}
			c.K8sNamespace = v
			return nil
		}},
	{key: "k8s_seccomp_profile", def: "", help: "With engine kubernetes, the seccomp profile of the sandbox pods as a Localhost profile: its path under the kubelet's seccomp folder (`/var/lib/kubelet/seccomp`), where each node must hold codebridge's profile (`runtime/confine/seccomp.json`). Unset: the container runtime's default profile (RuntimeDefault), which lets code use `ptrace` and `io_uring` (see [Kubernetes](kubernetes.md#seccomp)).",
		apply: func(c *Config, v string) error {
			if strings.HasPrefix(v, "/") || strings.Contains(v, "..") {
				return errors.New("want a path relative to the kubelet's seccomp folder, e.g. codebridge.json")
			}
			c.K8sSeccomp = v
			return nil
		}},
	{key: "k8s_warm_pool", def: "", help: "With engine kubernetes, an agent-sandbox (sigs.k8s.io/agent-sandbox) SandboxWarmPool of the namespace to claim each sandbox from (a SandboxClaim) instead of creating pods: its controller must run, and the pool's SandboxTemplate must hold codebridge's pod (see [Kubernetes](kubernetes.md#agent-sandbox-claiming-sandboxes-from-a-controller)). Claiming takes the controller a second or so even from a warm pool, so warm_containers still claims ahead. Unset: codebridge creates its pods, which needs nothing installed.",
		apply: func(c *Config, v string) error {
			if v != "" && !validNamespace(v) {
				return errors.New("want a SandboxWarmPool name: lower-case letters, digits and '-', at most 63")
			}
			c.K8sWarmPool = v
			return nil
		}},
	{key: "image", def: "", help: "Sandbox image. Unset: localhost/codebridge-sandbox:latest if present, else docker.io/library/python:3.12-slim.",
		apply: func(c *Config, v string) error { c.Image = v; return nil }},
	{key: "timeout", def: "30", help: "Default run_python time limit, in seconds (or a Go duration such as 45s).",
		apply: func(c *Config, v string) (err error) { c.Timeout, err = ParseSeconds(v); return err }},
	{key: "max_timeout", def: "120", help: "Largest timeout a caller may ask for; a larger one is capped to it.",
		apply: func(c *Config, v string) (err error) { c.MaxTimeout, err = ParseSeconds(v); return err }},
	{key: "memory", def: "512m", help: "Container memory limit (bytes, or with k, m, g); swap is not added on top.",
		apply: func(c *Config, v string) (err error) { c.Memory, err = ParseSize(v); return err }},
	{key: "pids", def: "128", help: "Container process limit.",
		apply: func(c *Config, v string) (err error) { c.Pids, err = parsePositive(v); return err }},
	{key: "cpus", def: "", help: "Container CPU limit, e.g. 1.5. Unset: no limit.",
		apply: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return errors.New("want a positive number such as 1 or 0.5")
			}
			c.CPUs = f
			return nil
		}},
	{key: "container_user", def: "65534:65534", help: "uid:gid the code runs as inside the container; uid 0 (root) and gid 0 (the root group) are refused.",
		apply: func(c *Config, v string) error {
			uidText, gidText, ok := strings.Cut(v, ":")
			uid, uerr := strconv.ParseUint(uidText, 10, 32)
			gid, gerr := strconv.ParseUint(gidText, 10, 32)
			if !ok || uerr != nil || gerr != nil {
				return errors.New("want numeric uid:gid such as 65534:65534")
			}
			if uid == 0 { // compare numbers: "00" is root too
				return errors.New("refusing to run sandboxed code as root (uid 0)")
			}
			if gid == 0 { // files of group root are often group-writable
				return errors.New("refusing to run sandboxed code in the root group (gid 0): choose another gid, such as 65534 (nogroup)")
			}
			c.ContainerUser = fmt.Sprintf("%d:%d", uid, gid)
			return nil
		}},
	{key: "state_dir", def: "", help: "Private state (a Podman socket codebridge starts). Unset: $XDG_STATE_HOME/codebridge or ~/.local/state/codebridge.", unset: func(Config) string { return defaultStateDir() },
		apply: func(c *Config, v string) error { c.StateDir = v; return nil }},
	{key: "log_level", def: "info", help: "debug, info, warn or error; logs go to stderr.",
		apply: func(c *Config, v string) error {
			if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
				return errors.New("want debug, info, warn or error")
			}
			return nil
		}},
	{key: "config_dir", def: "", help: "Folder of MCP server configs (*.json). Unset: ~/MCPs. The --config-dir flag wins.", flag: "config-dir", unset: func(Config) string { return defaultConfigDir() },
		apply: func(c *Config, v string) error { c.ConfigDir = v; return nil }},
	{key: "output_limit", def: "64k", help: "Cap on each of stdout and stderr returned from a run.",
		apply: func(c *Config, v string) error { n, err := ParseSize(v); c.OutputLimit = int(n); return err }},
	{key: "max_code_size", def: "1m", help: "Largest code run_python accepts.",
		apply: func(c *Config, v string) error { n, err := ParseSize(v); c.MaxCodeSize = int(n); return err }},
	{key: "max_argument_size", def: "4m", help: "Largest arguments of one MCP tool call from the sandbox; bigger calls fail with bad_arguments before reaching the server (stdio servers often crash on messages over about 10 MiB).",
		apply: func(c *Config, v string) error { n, err := ParseSize(v); c.MaxArgSize = int(n); return err }},
	{key: "max_attachment_size", def: "2m", help: "Largest image or file one run returns (show_image, return_file, figures); at most 16m.",
		apply: func(c *Config, v string) (err error) { c.MaxAttachment, err = sizeAtMost(v, 16<<20); return err }},
	{key: "max_attachments", def: "10", help: "Images and files one run returns, at most; later ones are dropped with a note.",
		apply: func(c *Config, v string) (err error) { c.MaxAttachN, err = intBetween(v, 0, 100); return err }},
	{key: "max_attachments_total", def: "8m", help: "Bytes of images and files one run returns, at most (before base64); at most 64m.",
		apply: func(c *Config, v string) (err error) { c.MaxAttachSum, err = sizeAtMost(v, 64<<20); return err }},
	{key: "preload", def: "numpy,pandas,matplotlib.pyplot", help: "Modules a session's Python imports in the background while it waits for its first run (comma-separated; empty for none). Makes a session's first data import instant; costs each session about 75 MiB, so it is skipped when MCP_BRIDGE_MEMORY is under 384m. Missing ones are skipped.",
		apply: func(c *Config, v string) error {
			c.Preload = nil
			for _, m := range strings.Split(v, ",") {
				m = strings.TrimSpace(m)
				if m == "" {
					continue
				}
				for _, part := range strings.Split(m, ".") {
					if !token.IsIdentifier(part) {
						return fmt.Errorf("%q is not a module name: want names such as numpy,pandas,matplotlib.pyplot", m)
					}
				}
				c.Preload = append(c.Preload, m)
			}
			return nil
		}},
	{key: "allow_self_server", def: "0", help: "1 lets a config entry launch codebridge itself (skipped by default to avoid recursion).",
		apply: func(c *Config, v string) (err error) { c.AllowSelf, err = strconv.ParseBool(v); return err }},
	{key: "server_idle_timeout", def: "600", help: "Stop a downstream MCP server unused this long, in seconds; 0 keeps it running.",
		apply: func(c *Config, v string) (err error) {
			if v == "0" {
				c.ServerIdle = 0
				return nil
			}
			c.ServerIdle, err = ParseSeconds(v)
			return err
		}},
	{key: "warm_containers", def: "auto", help: "Sandbox containers started ahead of time, so a run does not wait for one; 0 starts each on demand. auto: 1 for serve --http, where new sessions come and go, and with sessions 0, where every run takes a new container; otherwise 0 for stdio, whose one session keeps its container, and one spare started only when a reset, a time limit or a crash took the session's container, so the run after it does not wait.",
		apply: func(c *Config, v string) (err error) {
			if v == "auto" {
				c.WarmSandboxes = WarmAuto
				return nil
			}
			c.WarmSandboxes, err = intBetween(v, 0, 16)
			if err != nil {
				err = errors.New("want auto or a whole number from 0 to 16")
			}
			return err
		}},
	{key: "sandbox_stream", def: "socket", help: "How code in the sandbox talks to codebridge: socket (a unix socket mounted into the container, when the engine runs on this Linux host; the container's stdin and stdout otherwise, or when it cannot connect) or attach (always the container's stdin and stdout, relayed by the engine).",
		apply: func(c *Config, v string) error {
			switch v {
			case "socket", "attach":
				c.SocketStream = v == "socket"
				return nil
			}
			return errors.New("want socket or attach")
		}},
	{key: "runtime", def: "", help: "OCI runtime the sandbox containers run under, as the engine names it. `runsc` is gVisor, a kernel of its own in user space between the code and this host's kernel: the one codebridge documents and tests (set it up with `codebridge setup --runtime runsc`, see [engines.md](engines.md#gvisor-runsc)). With Podman, codebridge then starts a Podman service of its own under it, and refuses a Podman named by CONTAINER_HOST that runs another; Docker takes it per container (a name in its daemon.json's runtimes); with engine kubernetes it is the pods' runtimeClassName (e.g. gvisor). Unset: the engine's default (runc or crun; on Docker, a default runtime runsc counts as asked for).",
		apply: func(c *Config, v string) error {
			if v != "" && !validRuntime(v) {
				return errors.New("want an OCI runtime's name such as runsc (letters, digits, '.', '_', '-'), or an absolute path")
			}
			c.Runtime = v
			return nil
		}},
	{key: "sessions", def: "1", help: "1 keeps each MCP session's Python interpreter (variables, imports, files) between run_python calls; 0 gives every call a fresh container.",
		apply: func(c *Config, v string) (err error) { c.Sessions, err = strconv.ParseBool(v); return err }},
	{key: "session_idle_timeout", def: "900", help: "End a sandbox session unused this long, in seconds, and remove its container; 0 keeps it until its MCP session ends.",
		apply: func(c *Config, v string) (err error) {
			if v == "0" {
				c.SessionIdle = 0
				return nil
			}
			c.SessionIdle, err = ParseSeconds(v)
			return err
		}},
	{key: "max_sessions", def: "", help: "Live sandbox sessions (each holding a container) at most. A session that needs a container past it ends the session idle longest (its next run is told `evicted`); when every session is running code, the run fails with an error saying so. It no longer caps the MCP sessions open over HTTP: max_mcp_sessions does. Unset: from the machine's memory, see [Limits](performance.md#limits-that-fit-the-machine) (on the 2-core, 24 GiB build machine: 212 with the default preload, 1062 with `MCP_BRIDGE_PRELOAD=`).",
		unset: func(c Config) string { return strconv.Itoa(c.bounds().Sandboxes) },
		apply: func(c *Config, v string) (err error) {
			c.MaxSessions, err = intBetween(v, 1, sandbox.MaxBound)
			return err
		}},
	{key: "max_runs", def: "", help: "Runs executing in sandboxes at once, at most. A run past it waits for a slot for at most its time limit, then fails with a busy error. Each session queues its own runs and the slots go to the sessions with runs waiting in turn, so a burst from one cannot starve the others. Unset: 4 per core, fewer when half the machine's memory cannot hold that many containers at their memory limit (8 on 2 cores and 24 GiB).",
		unset: func(c Config) string { return strconv.Itoa(c.bounds().Runs) },
		apply: func(c *Config, v string) (err error) { c.MaxRuns, err = intBetween(v, 1, sandbox.MaxBound); return err }},
	{key: "max_queued", def: "", help: "run_python calls in progress or waiting (for their session's turn or a run slot) at once, at most; past that a call fails at once with a busy error. One MCP session may have at most half of them, so a burst from one leaves room for the others' calls. Unset: max_sessions plus max_runs, at least 256, so that every live session may have a call waiting (1,070 with `MCP_BRIDGE_PRELOAD=` on the build machine).",
		unset: func(c Config) string { return strconv.Itoa(max(256, c.MaxSessions+c.MaxRuns)) },
		apply: func(c *Config, v string) (err error) { c.MaxQueued, err = intBetween(v, 1, 65536); return err }},
	{key: "max_mcp_sessions", def: "4096", help: "MCP sessions open at once over HTTP, at most: one more closes the MCP session used least recently that has nothing in progress (its sandbox session stays, reachable by its handle), and is refused (503) only when every one has a request in progress. Only a safety cap: a session without a live sandbox costs codebridge little, and live sandboxes are bounded by max_sessions.",
		apply: func(c *Config, v string) (err error) { c.MaxMCPSessions, err = intBetween(v, 1, 1<<20); return err }},
	{key: "http", def: "", help: "Serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8080. The serve --http flag wins.", flag: "http",
		apply: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			if _, _, err := net.SplitHostPort(v); err != nil {
				return errors.New("want HOST:PORT such as 127.0.0.1:8080 (or :8080 for every interface)")
			}
			c.HTTP = v
			return nil
		}},
	{key: "http_token", def: "", help: "Bearer token HTTP clients must send (at least 16 characters). Unset: one is generated, kept in the state folder (http-token, mode 0600) and printed at start.", secret: true,
		apply: func(c *Config, v string) error {
			if v != "" {
				c.HTTPToken = secret.New(v)
			}
			return nil
		}},
	{key: "http_auth", def: "token", help: "token requires the bearer token on /mcp; none turns that off, which is refused unless ADDR is a loopback address.",
		apply: func(c *Config, v string) error {
			switch v {
			case "token":
				c.HTTPAuth = true
			case "none":
				c.HTTPAuth = false
			default:
				return errors.New("want token or none")
			}
			return nil
		}},
	{key: "http_allowed_origins", def: "", help: "Browser origins allowed to call /mcp besides loopback ones, comma-separated, e.g. https://agent.example.com. A request from another Origin is refused (403).",
		apply: func(c *Config, v string) error {
			c.HTTPOrigins = nil
			for _, o := range strings.Split(v, ",") {
				if o = strings.TrimSpace(o); o == "" {
					continue
				}
				u, err := url.Parse(o)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
					return fmt.Errorf("%q is not an origin: want scheme://host[:port] such as https://agent.example.com", o)
				}
				c.HTTPOrigins = append(c.HTTPOrigins, strings.ToLower(u.Scheme+"://"+u.Host))
			}
			return nil
		}},
	{key: "http_shutdown_grace", def: "20", help: "When an HTTP server is stopped (SIGTERM), how long runs in progress may finish before they are cancelled, in seconds.",
		apply: func(c *Config, v string) (err error) { c.ShutdownGrace, err = ParseSeconds(v); return err }},
	{key: "tools_allow", def: "", help: "Tool names or globs (comma-separated, Go path.Match syntax) that code may use on every server; unset admits all. A server's `\"tools\": {\"allow\"}` replaces it. See [Policy](security.md#policy-which-tools-code-may-use).",
		apply: func(c *Config, v string) (err error) { c.Tools.Allow, err = patterns(v); return err }},
	{key: "tools_deny", def: "", help: "Tool names or globs that code may never see or call, on any server; added to each server's `\"tools\": {\"deny\"}`. Deny wins over allow.",
		apply: func(c *Config, v string) (err error) { c.Tools.Deny, err = patterns(v); return err }},
	{key: "read_only", def: "0", help: "1 admits only tools annotated readOnlyHint: true (and not destructiveHint: true), on every server whose entry has no `\"readOnly\"`.",
		apply: func(c *Config, v string) (err error) { c.Tools.ReadOnly, err = optionalBool(v); return err }},
	{key: "tools_confirm", def: "", help: "Tool names or globs whose every call waits for the person's approval, asked through the agent's client (MCP elicitation); added to each server's `\"tools\": {\"confirm\"}`. See [Approvals](security.md#approvals-calls-the-person-confirms).",
		apply: func(c *Config, v string) (err error) { c.Tools.Confirm, err = patterns(v); return err }},
	{key: "tools_confirm_writes", def: "0", help: "1 asks the person's approval, as for tools_confirm, before every call of a tool not annotated readOnlyHint: true, on every server whose entry has no `\"confirmWrites\"`.",
		apply: func(c *Config, v string) (err error) { c.Tools.ConfirmWrites, err = optionalBool(v); return err }},
	{key: "quarantine_new", def: "0", help: "1 quarantines every tool that has no pinned definition yet (a newly added server's, a new tool of a known one) until `codebridge tools approve`; 0 pins them as first seen. Tools whose definition changed are always quarantined. See [Pinned tool definitions](security.md#pinned-tool-definitions).",
		apply: func(c *Config, v string) (err error) { c.QuarantineNew, err = strconv.ParseBool(v); return err }},
	{key: "confirm_save_tool", def: "0", help: "1 asks the person's approval, through the agent's client (MCP elicitation), before code saves a helper with `save_tool()`: the question shows its name, description and whole source (at most 8 KiB), since every later session defines it before its code runs. A save that is declined, or that a client without elicitation cannot ask about, is refused, and the audit records the answer. 0 saves without asking.",
		apply: func(c *Config, v string) (err error) { c.ConfirmSaveTool, err = strconv.ParseBool(v); return err }},
	{key: "audit", def: "1", help: "1 records every tool call made from code as a JSON line in audit/calls.jsonl under the state directory (see [Audit](security.md#audit-what-code-called)); 0 records nothing.",
		apply: func(c *Config, v string) (err error) { c.Audit, err = strconv.ParseBool(v); return err }},
	{key: "audit_contents", def: "0", help: "1 also records each call's arguments and result in the audit log (they may hold secrets); by default only their sizes.",
		apply: func(c *Config, v string) (err error) { c.AuditContents, err = strconv.ParseBool(v); return err }},
	{key: "audit_max_size", def: "10m", help: "Size at which the audit log is rotated (calls.jsonl becomes calls.jsonl.1).",
		apply: func(c *Config, v string) (err error) {
			c.AuditMaxSize, err = ParseSize(v)
			if err == nil && c.AuditMaxSize < 4<<10 {
				err = errors.New("want 4k or more")
			}
			return err
		}},
	{key: "audit_keep", def: "5", help: "Rotated audit logs kept besides the current one; older ones are deleted.",
		apply: func(c *Config, v string) (err error) { c.AuditKeep, err = intBetween(v, 0, 100); return err }},
	{key: "oauth_client_metadata_url", def: "", help: "The https URL of a Client ID Metadata Document that describes codebridge (client_name, redirect_uris `http://127.0.0.1/callback`, token_endpoint_auth_method none). `codebridge login` signs in with this URL as its client ID where the server's authorization server advertises `client_id_metadata_document_supported`, instead of registering; a server entry's own `oauth.clientId` still comes first. Unset: codebridge registers itself.",
		apply: func(c *Config, v string) error {
			c.OAuthClientMetadataURL = ""
			if v == "" {
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.Fragment != "" {
				return fmt.Errorf("%q is not an https URL with a path, such as https://example.com/codebridge/client.json", v)
			}
			c.OAuthClientMetadataURL = v
			return nil
		}},
}

// WarmAuto is [Config.WarmSandboxes] when warm_containers is auto.
const WarmAuto = -1

// Warm is how many containers to keep started ahead of time, and whether to
// start a spare one only when a reset, a time limit or a crash took a
// session's container (warm_containers auto, over stdio).
func (c Config) Warm() (n int, spare bool) {
	switch {
	case c.WarmSandboxes != WarmAuto:
		return c.WarmSandboxes, false
	case c.HTTP != "" || !c.Sessions: // new sessions come and go, or every run takes a new container
		return 1, false
	}
	return 0, true
}

// MinPreloadMemory is the smallest container memory limit under which
// sessions import nothing ahead: the data libraries take about 75 MiB.
const MinPreloadMemory = 384 << 20

// Preloads reports whether sessions import [Config.Preload] ahead of their
// first run: there are modules to import, and room for them in a container.
func (c Config) Preloads() bool {
	return len(c.Preload) > 0 && (c.Memory == 0 || c.Memory >= MinPreloadMemory)
}

// bounds are the default bounds on live sandboxes and runs, for this machine
// and these containers.
func (c Config) bounds() sandbox.Bounds {
	return sandbox.DefaultBounds(sandbox.LocalMachine(), cmp.Or(c.Memory, confine.DefaultMemory), sandbox.IdleMemory(c.Preloads()))
}

// optionalBool parses a setting that a server's entry can override: set,
// even to false, it is the global default.
func optionalBool(v string) (*bool, error) {
	b, err := strconv.ParseBool(v)
	return &b, err
}

// patterns parses a comma-separated list of tool names or globs.
func patterns(v string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if err := discovery.CheckPattern(p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// intBetween parses a whole number from lo to hi.
func intBetween(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("want a whole number from %d to %d", lo, hi)
	}
	return n, nil
}

// sizeAtMost parses a size in bytes (or with k, m, g) no larger than limit.
func sizeAtMost(v string, limit int64) (int, error) {
	n, err := ParseSize(v)
	if err != nil {
		return 0, err
	}
	if n > limit {
		return 0, fmt.Errorf("want a size from 1 byte to %dm", limit>>20)
	}
	return int(n), nil
}

// validRuntime reports whether v can name an OCI runtime: a name an engine
// knows it by, or an absolute path to one.
func validRuntime(v string) bool {
	if strings.HasPrefix(v, "/") {
		return !strings.ContainsAny(v, "\x00\n")
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return v != "." && v != ".."
}

// validNamespace reports whether v is a Kubernetes namespace name (a DNS
// label).
func validNamespace(v string) bool {
	if len(v) > 63 || v[0] == '-' || v[len(v)-1] == '-' {
		return false
	}
	for _, r := range v {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}
