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
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// Container engines of the engine setting ([Config.Engine]).
const (
	EngineAuto       = "auto"       // Podman where it is installed or answers, else Docker
	EnginePodman     = "podman"     // runtime/podman
	EngineDocker     = "docker"     // runtime/docker
	EngineKubernetes = "kubernetes" // runtime/kube: each sandbox a pod
)

// The lanes, the values of the lane setting (bridge/lane).
const (
	LaneCode   = "code"   // run_python
	LaneTools  = "tools"  // every downstream tool served directly
	LaneSearch = "search" // find, describe and call downstream tools

	// The names the tools lane serves downstream tools and prompts under.
	LaneNamesPrefixed = "prefixed" // SERVER__TOOL
	LaneNamesPlain    = "plain"    // each under its own name
)

// EnvPrefix starts every environment variable codebridge reads. The names match
// the reference Python bridge's, so users can switch without editing configs.
const EnvPrefix = "MCP_BRIDGE_"

// Config is codebridge's settings, resolved once at start-up by [Load]: a
// snapshot, passed by value and never edited after it is made (a command-line
// flag is a layer of Load, not an edit afterwards); new settings make a new
// Config.
type Config struct {
	Engine         string        `koanf:"engine"`                // container engine: EngineAuto, EnginePodman, EngineDocker or EngineKubernetes
	K8sNamespace   string        `koanf:"k8s_namespace"`         // the namespace of the sandbox pods; "" the kubeconfig context's
	K8sSeccomp     string        `koanf:"k8s_seccomp_profile"`   // a Localhost seccomp profile for the sandbox pods; "" RuntimeDefault
	K8sWarmPool    string        `koanf:"k8s_warm_pool"`         // an agent-sandbox SandboxWarmPool to claim sandboxes from; "" codebridge creates its pods
	Image          string        `koanf:"image"`                 // sandbox image; empty picks localhost/codebridge-sandbox, then python:3.12-slim
	Timeout        time.Duration `koanf:"timeout"`               // default run_python time limit
	MaxTimeout     time.Duration `koanf:"max_timeout"`           // upper bound for a caller's timeout
	Memory         int64         `koanf:"memory"`                // container memory limit in bytes (no extra swap)
	Pids           int64         `koanf:"pids"`                  // container pids limit
	CPUs           float64       `koanf:"cpus"`                  // container CPU limit; 0 means none
	ContainerUser  string        `koanf:"container_user"`        // uid:gid inside the container
	StateDir       string        `koanf:"state_dir"`             // private runtime state (e.g. a spawned Podman socket)
	LogLevel       slog.Level    `koanf:"log_level"`             // stderr log level
	ConfigDir      string        `koanf:"config_dir"`            // folder of *.json MCP server configs
	OutputLimit    int           `koanf:"output_limit"`          // per-stream output cap in bytes
	MaxCodeSize    int           `koanf:"max_code_size"`         // largest accepted code, in bytes
	MaxArgSize     int           `koanf:"max_argument_size"`     // largest arguments of one downstream tool call, in bytes
	MaxCalls       int           `koanf:"max_calls_per_run"`     // tool calls one run may make, at most; 0 no cap
	ServerConc     int           `koanf:"server_concurrency"`    // tool calls a downstream server is given at once, unless its entry says
	ServerQueue    int           `koanf:"server_queue"`          // tool calls that may wait for a slot on one server, at most
	MaxAttachment  int           `koanf:"max_attachment_size"`   // largest image or file one run returns, in bytes
	MaxAttachN     int           `koanf:"max_attachments"`       // images and files one run returns, at most
	MaxAttachSum   int           `koanf:"max_attachments_total"` // bytes of images and files one run returns, at most
	CheckArgs      bool          `koanf:"check_args"`            // check a run's tool calls against their schemas before it runs
	AllowSelf      bool          `koanf:"allow_self_server"`     // allow configs that launch codebridge itself
	ServerIdle     time.Duration `koanf:"server_idle_timeout"`   // stop a downstream server unused this long; 0 never
	WarmSandboxes  int           `koanf:"warm_containers"`       // containers kept started ahead of time; WarmAuto lets [Config.Warm] decide
	Sessions       bool          `koanf:"sessions"`              // keep each MCP session's interpreter between runs
	SocketStream   bool          `koanf:"sandbox_stream"`        // sandboxes talk through a unix socket where the engine can mount one
	Runtime        string        `koanf:"runtime"`               // OCI runtime sandboxes run under, e.g. runsc; "" is the engine's default
	SessionIdle    time.Duration `koanf:"session_idle_timeout"`  // end a sandbox session unused this long; 0 never
	MaxSessions    int           `koanf:"max_sessions"`          // live sandbox sessions (each holding a container) at most
	Preload        []string      `koanf:"preload"`               // modules a session's interpreter imports before its first run
	MaxRuns        int           `koanf:"max_runs"`              // runs executing in sandboxes at once, at most; more wait for a slot
	MaxQueued      int           `koanf:"max_queued"`            // run_python calls in progress or waiting (their session's turn, a slot) at once, at most
	MaxMCPSessions int           `koanf:"max_mcp_sessions"`      // MCP sessions open at once over HTTP, at most, with or without a sandbox
	TaskAfter      time.Duration `koanf:"task_after"`            // a run of a client of the tasks extension becomes a task after this long; 0 only when asked
	MaxTasks       int           `koanf:"max_tasks"`             // tasks kept at once, working or ended, at most
	TaskTTL        time.Duration `koanf:"task_ttl"`              // how long a task is kept after it ends

	Lane          string        `koanf:"lane"`                 // what MCP clients are served: LaneCode, LaneTools or LaneSearch
	LaneNames     string        `koanf:"lane_names"`           // the tools lane's names: LaneNamesPrefixed or LaneNamesPlain
	HTTP          string        `koanf:"http"`                 // address to serve MCP over HTTP on; "" serves stdio
	HTTPToken     secret.Value  `koanf:"http_token"`           // bearer token HTTP clients send; empty generates one in StateDir
	HTTPAuth      bool          `koanf:"http_auth"`            // require the bearer token; false is allowed on loopback only
	HTTPOrigins   []string      `koanf:"http_allowed_origins"` // browser origins allowed besides loopback ones
	ShutdownGrace time.Duration `koanf:"http_shutdown_grace"`  // how long runs in progress may finish when an HTTP server stops
	Metrics       bool          `koanf:"metrics"`              // serve --http keeps Prometheus metrics and serves them at /metrics
	// Tools is the tool policy of every server, which a server's entry
	// refines (MCP_BRIDGE_TOOLS_ALLOW, _TOOLS_DENY, _READ_ONLY,
	// _TOOLS_CONFIRM, _TOOLS_CONFIRM_WRITES).
	Tools         discovery.ToolPolicy `koanf:"-"`
	Audit         bool                 `koanf:"audit"`          // record every tool call made from code in the audit log
	AuditContents bool                 `koanf:"audit_contents"` // also record the calls' arguments and results
	AuditMaxSize  int64                `koanf:"audit_max_size"` // rotate the audit log at this size, in bytes
	AuditKeep     int                  `koanf:"audit_keep"`     // rotated audit logs kept
	QuarantineNew bool                 `koanf:"quarantine_new"` // hold back tools without a pinned definition until approved
	// ConfirmSaveTool asks the person before code saves a helper with
	// save_tool, which every later session then defines.
	ConfirmSaveTool bool `koanf:"confirm_save_tool"`
	// OAuthClientMetadataURL is the Client ID Metadata Document codebridge
	// login signs in as where an authorization server supports them; ""
	// registers instead.
	OAuthClientMetadataURL string `koanf:"oauth_client_metadata_url"`

	// derived has the keys left empty whose values were worked out from
	// the machine or other settings (their unset function).
	derived map[string]bool `koanf:"-"`
}

// Derived reports whether the setting key was left empty and its value
// worked out from the machine or other settings: a value the parts it
// configures may work out again when they learn more (max_sessions, once
// the sandbox image shows it has nothing to preload).
func (c Config) Derived(key string) bool { return c.derived[key] }

// DefaultMaxQueued is max_queued when it is left empty: every live session
// may have a call waiting, and at least 256.
func DefaultMaxQueued(maxSessions, maxRuns int) int { return max(256, maxSessions+maxRuns) }

// A setting is one row of the settings table: its key in the settings file
// (and, upper-cased after [EnvPrefix], its environment variable), its default,
// its help on the generated docs/settings.md, and how koanf decodes its text
// into its field of [Config]: the field tagged `koanf:"key"`, or the one
// named by field.
type setting struct {
	key    string // lower-case name, e.g. "max_timeout": the file key; MCP_BRIDGE_MAX_TIMEOUT in the environment
	def    string
	help   string                      // Markdown, for docs/settings.md
	parse  func(v string) (any, error) // the field's value from the text, checked; nil: the text itself
	field  string                      // the field's path where it has no tag, e.g. "Tools.Allow"
	flag   string                      // the command-line flag that sets it, if any, e.g. "http"
	secret bool                        // its value is never shown
	unset  func(c Config) string       // the value used when it is empty, where that depends on the machine or other settings (c has every other one)
}

// settings is the table behind [LoadConfig] and the README's settings table.
var settings = []setting{
	{key: "engine", def: EngineAuto, help: "The container engine sandboxes run on: podman, docker, kubernetes (each sandbox a pod on the cluster KUBECONFIG's current context names, or the one codebridge runs in; see [Kubernetes](kubernetes.md)), or auto (Podman where it is installed or answers, else Docker). Docker is found as its CLI finds it: DOCKER_HOST, the current Docker context, rootless Docker's socket, Docker Desktop's, /var/run/docker.sock. See [Engines](engines.md).",
		parse: oneOf("want auto, podman, docker or kubernetes", map[string]string{EngineAuto: EngineAuto, EnginePodman: EnginePodman, EngineDocker: EngineDocker, EngineKubernetes: EngineKubernetes})},
	{key: "k8s_namespace", def: "", help: "With engine kubernetes, the namespace of the sandbox pods. Unset: the namespace of KUBECONFIG's current context, or of the pod codebridge runs in, else default.",
		parse: text(func(v string) error {
			if v != "" && !validNamespace(v) {
				return errors.New("want a Kubernetes namespace name: lower-case letters, digits and '-', at most 63")
			}
			return nil
		})},
	{key: "k8s_seccomp_profile", def: "", help: "With engine kubernetes, the seccomp profile of the sandbox pods as a Localhost profile: its path under the kubelet's seccomp folder (`/var/lib/kubelet/seccomp`), where each node must hold codebridge's profile (`runtime/confine/seccomp.json`). Unset: the container runtime's default profile (RuntimeDefault), which lets code use `ptrace` and `io_uring` (see [Kubernetes](kubernetes.md#seccomp)).",
		parse: text(func(v string) error {
			if strings.HasPrefix(v, "/") || strings.Contains(v, "..") {
				return errors.New("want a path relative to the kubelet's seccomp folder, e.g. codebridge.json")
			}
			return nil
		})},
	{key: "k8s_warm_pool", def: "", help: "With engine kubernetes, an agent-sandbox (sigs.k8s.io/agent-sandbox) SandboxWarmPool of the namespace to claim each sandbox from (a SandboxClaim) instead of creating pods: its controller must run, and the pool's SandboxTemplate must hold codebridge's pod (see [Kubernetes](kubernetes.md#agent-sandbox-claiming-sandboxes-from-a-controller)). Claiming takes the controller a second or so even from a warm pool, so warm_containers still claims ahead. Unset: codebridge creates its pods, which needs nothing installed.",
		parse: text(func(v string) error {
			if v != "" && !validNamespace(v) {
				return errors.New("want a SandboxWarmPool name: lower-case letters, digits and '-', at most 63")
			}
			return nil
		})},
	{key: "image", def: "", help: "Sandbox image. Unset: localhost/codebridge-sandbox:latest if present, else docker.io/library/python:3.12-slim."},
	{key: "timeout", def: "30", help: "Default run_python time limit, in seconds (or a Go duration such as 45s).",
		parse: seconds},
	{key: "max_timeout", def: "120", help: "Largest timeout a caller may ask for; a larger one is capped to it.",
		parse: seconds},
	{key: "memory", def: "512m", help: "Container memory limit (bytes, or with k, m, g); swap is not added on top.",
		parse: size},
	{key: "pids", def: "128", help: "Container process limit.",
		parse: positive},
	{key: "cpus", def: "", help: "Container CPU limit, e.g. 1.5. Unset: no limit.",
		parse: func(v string) (any, error) {
			if v == "" {
				return 0.0, nil
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return nil, errors.New("want a positive number such as 1 or 0.5")
			}
			return f, nil
		}},
	{key: "container_user", def: "65534:65534", help: "uid:gid the code runs as inside the container; uid 0 (root) and gid 0 (the root group) are refused.",
		parse: func(v string) (any, error) {
			uidText, gidText, ok := strings.Cut(v, ":")
			uid, uerr := strconv.ParseUint(uidText, 10, 32)
			gid, gerr := strconv.ParseUint(gidText, 10, 32)
			if !ok || uerr != nil || gerr != nil {
				return nil, errors.New("want numeric uid:gid such as 65534:65534")
			}
			if uid == 0 { // compare numbers: "00" is root too
				return nil, errors.New("refusing to run sandboxed code as root (uid 0)")
			}
			if gid == 0 { // files of group root are often group-writable
				return nil, errors.New("refusing to run sandboxed code in the root group (gid 0): choose another gid, such as 65534 (nogroup)")
			}
			return fmt.Sprintf("%d:%d", uid, gid), nil
		}},
	{key: "state_dir", def: "", help: "Private state (a Podman socket codebridge starts). Unset: $XDG_STATE_HOME/codebridge or ~/.local/state/codebridge.", unset: func(Config) string { return defaultStateDir() }},
	{key: "log_level", def: "info", help: "debug, info, warn or error; logs go to stderr.",
		parse: func(v string) (any, error) {
			var l slog.Level
			if err := l.UnmarshalText([]byte(v)); err != nil {
				return nil, errors.New("want debug, info, warn or error")
			}
			return l, nil
		}},
	{key: "config_dir", def: "", help: "Folder of MCP server configs (*.json). Unset: ~/MCPs. The --config-dir flag wins.", flag: "config-dir", unset: func(Config) string { return defaultConfigDir() }},
	{key: "output_limit", def: "64k", help: "Cap on each of stdout and stderr returned from a run.",
		parse: size},
	{key: "max_code_size", def: "1m", help: "Largest code run_python accepts.",
		parse: size},
	{key: "max_argument_size", def: "4m", help: "Largest arguments of one MCP tool call from the sandbox; bigger calls fail with bad_arguments before reaching the server (stdio servers often crash on messages over about 10 MiB).",
		parse: size},
	{key: "max_calls_per_run", def: "1000", help: "Tool calls one run_python call may make, at most; the call past it fails at once, unsent, with `MCPError` `too_many_calls` naming this setting. Every `call_tool` the run sends counts (the `mcp_<alias>` proxies and tool functions send one each), refused ones too (policy, quarantine, unknown tool), so a loop that keeps failing stops as well; reading resources and prompts does not count. 1000 is five times a 200-call fan-out, and stops a runaway loop before it has sent a server more than that; work that needs more calls should batch them (a tool that takes many items) or go on in the next run. 0: no cap.",
		parse: count(0, 1<<20)},
	{key: "max_attachment_size", def: "2m", help: "Largest image or file one run returns (show_image, return_file, figures); at most 16m.",
		parse: sizeAtMost(16 << 20)},
	{key: "max_attachments", def: "10", help: "Images and files one run returns, at most; later ones are dropped with a note.",
		parse: count(0, 100)},
	{key: "max_attachments_total", def: "8m", help: "Bytes of images and files one run returns, at most (before base64); at most 64m.",
		parse: sizeAtMost(64 << 20)},
	{key: "check_args", def: "1", help: "1 checks a run's tool calls against the tools' schemas before any of its lines runs: calls whose tool and argument names are written out (`mcp_<alias>.<tool>(...)`, `call_tool(\"server\", \"tool\", {...})`, ...) are checked for unknown tools and arguments, missing required ones, and literal values of the wrong JSON type or outside an enum; a mismatch fails the run (`argument_check`) with the line, the argument and the signature, and nothing runs. 0 leaves it to each call's own check when it is made. See [Arguments checked before a run](sandbox-api.md#arguments-checked-before-a-run).",
		parse: boolean},
	{key: "preload", def: "numpy,pandas,matplotlib.pyplot", help: "Modules a session's Python imports in the background while it waits for its first run (comma-separated; empty for none). Makes a session's first data import instant; costs each session about 75 MiB, so it is skipped when MCP_BRIDGE_MEMORY is under 384m. Missing ones are skipped; when the image has none of them (the minimal image), the first run says so, and codebridge stops preloading and sizes an unset max_sessions without them.",
		parse: func(v string) (any, error) {
			var modules []string
			for _, m := range strings.Split(v, ",") {
				m = strings.TrimSpace(m)
				if m == "" {
					continue
				}
				for _, part := range strings.Split(m, ".") {
					if !token.IsIdentifier(part) {
						return nil, fmt.Errorf("%q is not a module name: want names such as numpy,pandas,matplotlib.pyplot", m)
					}
				}
				modules = append(modules, m)
			}
			return modules, nil
		}},
	{key: "allow_self_server", def: "0", help: "1 lets a config entry launch codebridge itself (skipped by default to avoid recursion).",
		parse: boolean},
	{key: "server_idle_timeout", def: "600", help: "Stop a downstream MCP server unused this long, in seconds; 0 keeps it running.",
		parse: secondsOrOff},
	{key: "warm_containers", def: "auto", help: "Sandbox containers started ahead of time, so a run does not wait for one; 0 starts each on demand. auto: 1 for serve --http, where new sessions come and go, and with sessions 0, where every run takes a new container; otherwise 0 for stdio, whose one session keeps its container, and one spare started only when a reset, a time limit or a crash took the session's container, so the run after it does not wait.",
		parse: func(v string) (any, error) {
			if v == "auto" {
				return WarmAuto, nil
			}
			n, err := count(0, 16)(v)
			if err != nil {
				return nil, errors.New("want auto or a whole number from 0 to 16")
			}
			return n, nil
		}},
	{key: "sandbox_stream", def: "socket", help: "How code in the sandbox talks to codebridge: socket (a unix socket mounted into the container, when the engine runs on this Linux host; the container's stdin and stdout otherwise, or when it cannot connect) or attach (always the container's stdin and stdout, relayed by the engine).",
		parse: oneOf("want socket or attach", map[string]bool{"socket": true, "attach": false})},
	{key: "runtime", def: "", help: "OCI runtime the sandbox containers run under, as the engine names it. `runsc` is gVisor, a kernel of its own in user space between the code and this host's kernel: the one codebridge documents and tests (set it up with `codebridge setup --runtime runsc`, see [engines.md](engines.md#gvisor-runsc)). With Podman, codebridge then starts a Podman service of its own under it, and refuses a Podman named by CONTAINER_HOST that runs another; Docker takes it per container (a name in its daemon.json's runtimes); with engine kubernetes it is the pods' runtimeClassName (e.g. gvisor). Unset: the engine's default (runc or crun; on Docker, a default runtime runsc counts as asked for).",
		parse: text(func(v string) error {
			if v != "" && !validRuntime(v) {
				return errors.New("want an OCI runtime's name such as runsc (letters, digits, '.', '_', '-'), or an absolute path")
			}
			return nil
		})},
	{key: "sessions", def: "1", help: "1 keeps each MCP session's Python interpreter (variables, imports, files) between run_python calls; 0 gives every call a fresh container.",
		parse: boolean},
	{key: "session_idle_timeout", def: "900", help: "End a sandbox session unused this long, in seconds, and remove its container; 0 keeps it until its MCP session ends.",
		parse: secondsOrOff},
	{key: "max_sessions", def: "", help: "Live sandbox sessions (each holding a container) at most. A session that needs a container past it ends the session idle longest (its next run is told `evicted`); when every session is running code, the run fails with an error saying so. It no longer caps the MCP sessions open over HTTP: max_mcp_sessions does. Unset: from the machine's memory, see [Limits](performance.md#limits-that-fit-the-machine) (on the 2-core, 24 GiB build machine: 212 with the default preload, 1062 with `MCP_BRIDGE_PRELOAD=`, or once the first run shows the image has none of the modules to preload, as the minimal image).",
		unset: func(c Config) string { return strconv.Itoa(c.bounds().Sandboxes) },
		parse: count(1, sandbox.MaxBound)},
	{key: "max_runs", def: "", help: "Runs executing in sandboxes at once, at most. A run past it waits for a slot for at most its time limit, then fails with a busy error. Each session queues its own runs and the slots go to the sessions with runs waiting in turn, so a burst from one cannot starve the others. Unset: 4 per core, fewer when half the machine's memory cannot hold that many containers at their memory limit (8 on 2 cores and 24 GiB).",
		unset: func(c Config) string { return strconv.Itoa(c.bounds().Runs) },
		parse: count(1, sandbox.MaxBound)},
	{key: "max_queued", def: "", help: "run_python calls in progress or waiting (for their session's turn or a run slot) at once, at most; past that a call fails at once with a busy error. One MCP session may have at most half of them, so a burst from one leaves room for the others' calls. Unset: max_sessions plus max_runs, at least 256, so that every live session may have a call waiting (1,070 with `MCP_BRIDGE_PRELOAD=` on the build machine).",
		unset: func(c Config) string { return strconv.Itoa(DefaultMaxQueued(c.MaxSessions, c.MaxRuns)) },
		parse: count(1, 65536)},
	{key: "max_mcp_sessions", def: "4096", help: "MCP sessions open at once over HTTP, at most: one more closes the MCP session used least recently that has nothing in progress (its sandbox session stays, reachable by its handle), and is refused (503) only when every one has a request in progress. Only a safety cap: a session without a live sandbox costs codebridge little, and live sandboxes are bounded by max_sessions.",
		parse: count(1, 1<<20)},
	{key: "task_after", def: "30", help: "For a client that declares MCP's tasks extension (`io.modelcontextprotocol/tasks`) on its request, a run_python call still running after this many seconds returns a task handle instead of holding the client; the client polls `tasks/get` for the result ([Tasks](tasks.md)). A call whose `_meta` has `\"codebridge/task\": true` gets its handle at once. 0: only calls that ask become tasks. A client without the extension always waits for the result.",
		parse: secondsOrOff},
	{key: "max_tasks", def: "256", help: "Tasks kept at once, working or ended (each for task_ttl after it ends), at most. Past it, a call that would become a task stays a plain call and waits for its result. Runs in progress are bounded by max_queued in any case.",
		parse: count(1, 1<<16)},
	{key: "task_ttl", def: "3600", help: "How long a task and its result are kept after it ends, in seconds, for `tasks/get`; then it is forgotten. The task's `ttlMs` counts from its creation and grows while it works.",
		parse: seconds},
	{key: "server_concurrency", def: "16", help: "Tool calls one downstream MCP server is given at once, across every run and MCP session, unless its entry sets `\"maxConcurrency\"` ([Servers](servers.md#the-server-files)); the calls past it wait in line (server_queue), in the order they came. 16 is a quarter of the 64 requests a run's sandbox has served at once: enough for one `asyncio.gather` to keep a server that waits on a network API busy, without sending all 64 to a server written for one client at a time. Tools listings are not counted.",
		parse: count(1, discovery.MaxConcurrencyLimit)},
	{key: "server_queue", def: "", help: "Tool calls that may wait for a slot on one downstream server, at most; past it a call fails at once, unsent, with `MCPError` `busy`, naming the server and its limits. A waiting call gives up at its run's time limit. Unset: 64 per run slot (max_runs times the 64 requests a run's sandbox has served at once), at least 256, so the runs alone fill it only when every one is waiting on the same server (512 on the build machine).",
		unset: func(c Config) string { return strconv.Itoa(max(256, c.MaxRuns*python.MaxRequests)) },
		parse: count(1, 1<<20)},
	{key: "lane", def: LaneCode, help: "What MCP clients are served: code (the one tool run_python, tool calls made from code in the sandbox), tools (every downstream tool, resource and prompt served directly, named after its server), or search (a few tools that find, describe and call downstream tools). Over HTTP a request whose URL carries `codemode=false` or `codemode=off` is served the tools lane whatever this says. The serve --lane flag wins. See [Lanes](lanes.md).", flag: "lane",
		parse: oneOf("want code, tools or search", map[string]string{LaneCode: LaneCode, LaneTools: LaneTools, LaneSearch: LaneSearch})},
	{key: "lane_names", def: LaneNamesPrefixed, help: "The names the tools lane serves downstream tools and prompts under: prefixed (`SERVER__TOOL`, which says its server and never collides; see [Lanes](lanes.md#names)), or plain (each under its own name, as its server gives it, for a client or a test suite that asks for tools by those names; a name two servers give is then served for neither, and the log says so, and a name that is not 64 characters of `[a-zA-Z0-9_-]` keeps its prefixed form).",
		parse: oneOf("want prefixed or plain", map[string]string{LaneNamesPrefixed: LaneNamesPrefixed, LaneNamesPlain: LaneNamesPlain})},
	{key: "http", def: "", help: "Serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8080. The serve --http flag wins.", flag: "http",
		parse: text(func(v string) error {
			if v == "" {
				return nil
			}
			if _, _, err := net.SplitHostPort(v); err != nil {
				return errors.New("want HOST:PORT such as 127.0.0.1:8080 (or :8080 for every interface)")
			}
			return nil
		})},
	{key: "http_token", def: "", help: "Bearer token HTTP clients must send (at least 16 characters). Unset: one is generated, kept in the state folder (http-token, mode 0600) and printed at start.", secret: true,
		parse: func(v string) (any, error) {
			if v == "" {
				return secret.Value{}, nil
			}
			return secret.New(v), nil
		}},
	{key: "http_auth", def: "token", help: "token requires the bearer token on /mcp; none turns that off, which is refused unless ADDR is a loopback address.",
		parse: oneOf("want token or none", map[string]bool{"token": true, "none": false})},
	{key: "http_allowed_origins", def: "", help: "Browser origins allowed to call /mcp besides loopback ones, comma-separated, e.g. https://agent.example.com. A request from another Origin is refused (403).",
		parse: func(v string) (any, error) {
			var origins []string
			for _, o := range strings.Split(v, ",") {
				if o = strings.TrimSpace(o); o == "" {
					continue
				}
				u, err := url.Parse(o)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
					return nil, fmt.Errorf("%q is not an origin: want scheme://host[:port] such as https://agent.example.com", o)
				}
				origins = append(origins, strings.ToLower(u.Scheme+"://"+u.Host))
			}
			return origins, nil
		}},
	{key: "metrics", def: "1", help: "1: `serve --http` keeps Prometheus metrics and serves them at `/metrics`, behind the same bearer token as `/mcp` (see [Metrics](observability.md#metrics)); 0 keeps none. Over stdio there are none.",
		parse: boolean},
	{key: "http_shutdown_grace", def: "20", help: "When an HTTP server is stopped (SIGTERM), how long runs in progress may finish before they are cancelled, in seconds.",
		parse: seconds},
	{key: "tools_allow", def: "", help: "Tool names or globs (comma-separated, Go path.Match syntax) that code may use on every server; unset admits all. A server's `\"tools\": {\"allow\"}` replaces it. See [Policy](security.md#policy-which-tools-code-may-use).",
		field: "Tools.Allow", parse: patterns},
	{key: "tools_deny", def: "", help: "Tool names or globs that code may never see or call, on any server; added to each server's `\"tools\": {\"deny\"}`. Deny wins over allow.",
		field: "Tools.Deny", parse: patterns},
	{key: "read_only", def: "0", help: "1 admits only tools annotated readOnlyHint: true (and not destructiveHint: true), on every server whose entry has no `\"readOnly\"`.",
		field: "Tools.ReadOnly", parse: optionalBool},
	{key: "tools_confirm", def: "", help: "Tool names or globs whose every call waits for the person's approval, asked through the agent's client (MCP elicitation); added to each server's `\"tools\": {\"confirm\"}`. See [Approvals](security.md#approvals-calls-the-person-confirms).",
		field: "Tools.Confirm", parse: patterns},
	{key: "tools_confirm_writes", def: "0", help: "1 asks the person's approval, as for tools_confirm, before every call of a tool not annotated readOnlyHint: true, on every server whose entry has no `\"confirmWrites\"`.",
		field: "Tools.ConfirmWrites", parse: optionalBool},
	{key: "quarantine_new", def: "0", help: "1 quarantines every tool that has no pinned definition yet (a newly added server's, a new tool of a known one) until `codebridge tools approve`; 0 pins them as first seen. Tools whose definition changed are always quarantined. See [Pinned tool definitions](security.md#pinned-tool-definitions).",
		parse: boolean},
	{key: "confirm_save_tool", def: "0", help: "1 asks the person's approval, through the agent's client (MCP elicitation), before code saves a helper with `save_tool()`: the question shows its name, description and whole source (at most 8 KiB), since every later session defines it before its code runs. A save that is declined, or that a client without elicitation cannot ask about, is refused, and the audit records the answer. 0 saves without asking.",
		parse: boolean},
	{key: "audit", def: "1", help: "1 records every tool call made from code as a JSON line in audit/calls.jsonl under the state directory (see [Audit](security.md#audit-what-code-called)); 0 records nothing.",
		parse: boolean},
	{key: "audit_contents", def: "0", help: "1 also records each call's arguments and result in the audit log (they may hold secrets); by default only their sizes.",
		parse: boolean},
	{key: "audit_max_size", def: "10m", help: "Size at which the audit log is rotated (calls.jsonl becomes calls.jsonl.1).",
		parse: func(v string) (any, error) {
			n, err := ParseSize(v)
			if err == nil && n < 4<<10 {
				err = errors.New("want 4k or more")
			}
			return n, err
		}},
	{key: "audit_keep", def: "5", help: "Rotated audit logs kept besides the current one; older ones are deleted.",
		parse: count(0, 100)},
	{key: "oauth_client_metadata_url", def: "", help: "The https URL of a Client ID Metadata Document that describes codebridge (client_name, redirect_uris `http://127.0.0.1/callback`, token_endpoint_auth_method none). `codebridge login` signs in with this URL as its client ID where the server's authorization server advertises `client_id_metadata_document_supported`, instead of registering; a server entry's own `oauth.clientId` still comes first. Unset: codebridge registers itself.",
		parse: text(func(v string) error {
			if v == "" {
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.Fragment != "" {
				return fmt.Errorf("%q is not an https URL with a path, such as https://example.com/codebridge/client.json", v)
			}
			return nil
		})},
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

// The parse functions of the settings table: each reads a setting's text
// into its field's type, or says what is wanted.

func seconds(v string) (any, error) { return ParseSeconds(v) }

// secondsOrOff is seconds, or 0 for never.
func secondsOrOff(v string) (any, error) {
	if v == "0" {
		return time.Duration(0), nil
	}
	return ParseSeconds(v)
}

func size(v string) (any, error) { return ParseSize(v) }

func positive(v string) (any, error) { return parsePositive(v) }

func boolean(v string) (any, error) { return strconv.ParseBool(v) }

// optionalBool is a setting that a server's entry can override: set, even
// to false, it is the global default.
func optionalBool(v string) (any, error) {
	b, err := strconv.ParseBool(v)
	return &b, err
}

// text is the text itself, once check accepts it.
func text(check func(v string) error) func(string) (any, error) {
	return func(v string) (any, error) { return v, check(v) }
}

// oneOf is the value of one of choices' names; else want is the error.
func oneOf[T any](want string, choices map[string]T) func(string) (any, error) {
	return func(v string) (any, error) {
		if c, ok := choices[v]; ok {
			return c, nil
		}
		return nil, errors.New(want)
	}
}

// patterns is a comma-separated list of tool names or globs.
func patterns(v string) (any, error) {
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

// count is a whole number from lo to hi.
func count(lo, hi int) func(string) (any, error) {
	return func(v string) (any, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("want a whole number from %d to %d", lo, hi)
		}
		return n, nil
	}
}

// sizeAtMost is a size in bytes (or with k, m, g) no larger than limit.
func sizeAtMost(limit int64) func(string) (any, error) {
	return func(v string) (any, error) {
		n, err := ParseSize(v)
		if err != nil {
			return nil, err
		}
		if n > limit {
			return nil, fmt.Errorf("want a size from 1 byte to %dm", limit>>20)
		}
		return n, nil
	}
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
