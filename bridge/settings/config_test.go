package settings

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// TestMain points the user's config folder at an empty one, so no settings
// file of the machine's reaches a test.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "settings-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Setenv("HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestLoadConfigDefaults(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	t.Setenv("XDG_STATE_HOME", "")
	c, err := LoadConfig(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	bounds := sandbox.DefaultBounds(sandbox.LocalMachine(), 512<<20, sandbox.IdleMemory(true))
	want := Config{
		Timeout: 30 * time.Second, MaxTimeout: 120 * time.Second, Memory: 512 << 20, Pids: 128,
		ContainerUser: "65534:65534", StateDir: "/home/u/.local/state/codebridge", ConfigDir: "/home/u/MCPs",
		OutputLimit: 64 << 10, MaxCodeSize: 1 << 20, MaxArgSize: 4 << 20, MaxCalls: 1000, ServerConc: 16, ServerQueue: max(256, bounds.Runs*64),
		Engine: EngineAuto, MaxAttachment: 2 << 20, MaxAttachN: 10, MaxAttachSum: 8 << 20, CheckArgs: true, ServerIdle: 10 * time.Minute, WarmSandboxes: WarmAuto, Sessions: true, SocketStream: true, SessionIdle: 15 * time.Minute, MaxSessions: bounds.Sandboxes,
		Preload: []string{"numpy", "pandas", "matplotlib.pyplot"},
		MaxRuns: bounds.Runs, MaxQueued: max(256, bounds.Sandboxes+bounds.Runs), MaxMCPSessions: 4096, Lane: LaneCode, LaneNames: LaneNamesPrefixed,
		TaskAfter: 30 * time.Second, MaxTasks: 256, TaskTTL: time.Hour, HTTPAuth: true, ShutdownGrace: 20 * time.Second, Metrics: true,
		Tools: discovery.ToolPolicy{ReadOnly: new(false), ConfirmWrites: new(false)}, Audit: true, AuditMaxSize: 10 << 20, AuditKeep: 5,
		derived: map[string]bool{"config_dir": true, "state_dir": true, "max_sessions": true, "max_runs": true, "max_queued": true, "server_queue": true},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
}

// TestMachineBounds: unset, max_sessions and max_runs come from the machine
// and the container settings they are given with; set, they are as given.
func TestMachineBounds(t *testing.T) {
	machine := sandbox.LocalMachine()
	tests := []struct {
		name    string
		environ []string
		want    sandbox.Bounds
	}{
		{"no preload", []string{"MCP_BRIDGE_PRELOAD="}, sandbox.DefaultBounds(machine, 512<<20, sandbox.IdleSandboxMemory)},
		{"preload", nil, sandbox.DefaultBounds(machine, 512<<20, sandbox.IdleSandboxMemory+sandbox.PreloadMemory)},
		{"preload skipped under 384m", []string{"MCP_BRIDGE_MEMORY=256m"}, sandbox.DefaultBounds(machine, 256<<20, sandbox.IdleSandboxMemory)},
		{"bigger containers", []string{"MCP_BRIDGE_MEMORY=2g"}, sandbox.DefaultBounds(machine, 2<<30, sandbox.IdleSandboxMemory+sandbox.PreloadMemory)},
		{"set", []string{"MCP_BRIDGE_MAX_SESSIONS=3", "MCP_BRIDGE_MAX_RUNS=2"}, sandbox.Bounds{Sandboxes: 3, Runs: 2}},
		{"set empty", []string{"MCP_BRIDGE_MAX_SESSIONS=", "MCP_BRIDGE_PRELOAD="}, sandbox.DefaultBounds(machine, 512<<20, sandbox.IdleSandboxMemory)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.environ, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := (sandbox.Bounds{Sandboxes: c.MaxSessions, Runs: c.MaxRuns}); got != tt.want {
				t.Errorf("bounds %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWarm(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		n       int
		spare   bool
	}{
		{"stdio", nil, 0, true},
		{"http", []string{"MCP_BRIDGE_HTTP=127.0.0.1:0"}, 1, false},
		{"set", []string{"MCP_BRIDGE_WARM_CONTAINERS=2"}, 2, false},
		{"set to none over http", []string{"MCP_BRIDGE_WARM_CONTAINERS=0", "MCP_BRIDGE_HTTP=127.0.0.1:0"}, 0, false},
		{"auto", []string{"MCP_BRIDGE_WARM_CONTAINERS=auto"}, 0, true},
		{"stdio without sessions", []string{"MCP_BRIDGE_SESSIONS=0"}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.environ, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n, spare := c.Warm(); n != tt.n || spare != tt.spare {
				t.Errorf("Warm() = %d, %v; want %d, %v", n, spare, tt.n, tt.spare)
			}
		})
	}
}

func TestLoadConfigEnvironment(t *testing.T) {
	c, err := LoadConfig([]string{
		"MCP_BRIDGE_IMAGE=localhost/x:1", "MCP_BRIDGE_TIMEOUT=5", "MCP_BRIDGE_MAX_TIMEOUT=2m",
		"MCP_BRIDGE_MEMORY=1g", "MCP_BRIDGE_PIDS=64", "MCP_BRIDGE_CPUS=0.5", "MCP_BRIDGE_CONTAINER_USER=1000:1000",
		"MCP_BRIDGE_STATE_DIR=/s", "MCP_BRIDGE_LOG_LEVEL=debug", "MCP_BRIDGE_CONFIG_DIR=/c",
		"MCP_BRIDGE_OUTPUT_LIMIT=1m", "MCP_BRIDGE_MAX_ARGUMENT_SIZE=8m", "MCP_BRIDGE_SERVER_IDLE_TIMEOUT=0", "MCP_BRIDGE_WARM_CONTAINERS=0",
		"MCP_BRIDGE_PRELOAD=", "MCP_BRIDGE_SANDBOX_STREAM=attach",
		"MCP_BRIDGE_RUNTIME=podman", // the reference bridge's; accepted and ignored
		"OTHER=1",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := LoadConfig([]string{"MCP_BRIDGE_TOOLS_ALLOW= get-*, echo ,", "MCP_BRIDGE_TOOLS_DENY=*delete*", "MCP_BRIDGE_READ_ONLY=1",
		"MCP_BRIDGE_TOOLS_CONFIRM=send_*", "MCP_BRIDGE_TOOLS_CONFIRM_WRITES=1", "MCP_BRIDGE_AUDIT=0", "MCP_BRIDGE_AUDIT_CONTENTS=1", "MCP_BRIDGE_AUDIT_MAX_SIZE=1m", "MCP_BRIDGE_AUDIT_KEEP=0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantTools := discovery.ToolPolicy{Allow: []string{"get-*", "echo"}, Deny: []string{"*delete*"}, ReadOnly: new(true), Confirm: []string{"send_*"}, ConfirmWrites: new(true)}
	if !reflect.DeepEqual(c2.Tools, wantTools) || c2.Audit || !c2.AuditContents || c2.AuditMaxSize != 1<<20 || c2.AuditKeep != 0 {
		t.Errorf("policy and audit settings: got %+v", c2)
	}
	if c.Image != "localhost/x:1" || c.Timeout != 5*time.Second || c.MaxTimeout != 2*time.Minute ||
		c.Memory != 1<<30 || c.Pids != 64 || c.CPUs != 0.5 || c.ContainerUser != "1000:1000" ||
		c.StateDir != "/s" || c.LogLevel.String() != "DEBUG" || c.ConfigDir != "/c" ||
		c.OutputLimit != 1<<20 || c.MaxArgSize != 8<<20 || c.ServerIdle != 0 || c.WarmSandboxes != 0 || c.Preload != nil || c.SocketStream {
		t.Errorf("got %+v", c)
	}
}

func TestLoadConfigRuntime(t *testing.T) {
	for _, v := range []string{"", "runsc", "runsc-kvm", "/usr/local/lib/codebridge/runsc"} {
		c, err := LoadConfig([]string{"MCP_BRIDGE_RUNTIME=" + v}, nil)
		if err != nil || c.Runtime != v {
			t.Errorf("MCP_BRIDGE_RUNTIME=%s: runtime %q, %v", v, c.Runtime, err)
		}
	}
}

func TestLoadConfigHTTP(t *testing.T) {
	c, err := LoadConfig([]string{"MCP_BRIDGE_HTTP=127.0.0.1:8080", "MCP_BRIDGE_HTTP_TOKEN=t0ken-t0ken-t0ken", "MCP_BRIDGE_HTTP_AUTH=none",
		"MCP_BRIDGE_HTTP_ALLOWED_ORIGINS= https://Agent.Example.com , http://b.example:8443/", "MCP_BRIDGE_HTTP_SHUTDOWN_GRACE=1m", "MCP_BRIDGE_MAX_RUNS=4"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP != "127.0.0.1:8080" || c.HTTPToken.Reveal() != "t0ken-t0ken-t0ken" || c.HTTPAuth || c.ShutdownGrace != time.Minute || c.MaxRuns != 4 ||
		!reflect.DeepEqual(c.HTTPOrigins, []string{"https://agent.example.com", "http://b.example:8443"}) {
		t.Errorf("got %+v", c)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct{ env, want string }{
		{"MCP_BRIDGE_TIMEOUT=soon", "invalid MCP_BRIDGE_TIMEOUT=\"soon\": want whole seconds"},
		{"MCP_BRIDGE_SANDBOX_STREAM=pipe", "invalid MCP_BRIDGE_SANDBOX_STREAM=\"pipe\": want socket or attach"},
		{"MCP_BRIDGE_RUNTIME=runsc --debug", "invalid MCP_BRIDGE_RUNTIME=\"runsc --debug\": want an OCI runtime's name"},
		{"MCP_BRIDGE_RUNTIME=../runsc", "invalid MCP_BRIDGE_RUNTIME"},
		{"MCP_BRIDGE_TIMEOUT=-3", "invalid MCP_BRIDGE_TIMEOUT"},
		{"MCP_BRIDGE_TIMEOUT=500", "timeout 8m20s (MCP_BRIDGE_TIMEOUT) is larger than max_timeout 2m0s (default)"},
		// Whole seconds past time.Duration's range must not wrap around to a
		// positive or negative duration.
		{"MCP_BRIDGE_MAX_TIMEOUT=20000000000", "invalid MCP_BRIDGE_MAX_TIMEOUT=\"20000000000\": want at most"},
		{"MCP_BRIDGE_SERVER_IDLE_TIMEOUT=10000000000", "invalid MCP_BRIDGE_SERVER_IDLE_TIMEOUT"},
		{"MCP_BRIDGE_MEMORY=lots", "invalid MCP_BRIDGE_MEMORY=\"lots\": invalid size \"lots\""},
		{"MCP_BRIDGE_OUTPUT_LIMIT=0", "invalid MCP_BRIDGE_OUTPUT_LIMIT"},
		{"MCP_BRIDGE_MAX_ARGUMENT_SIZE=big", "invalid MCP_BRIDGE_MAX_ARGUMENT_SIZE"},
		{"MCP_BRIDGE_MAX_ATTACHMENT_SIZE=17m", "invalid MCP_BRIDGE_MAX_ATTACHMENT_SIZE=\"17m\": want a size from 1 byte to 16m"},
		{"MCP_BRIDGE_MAX_ATTACHMENTS=101", "invalid MCP_BRIDGE_MAX_ATTACHMENTS"},
		{"MCP_BRIDGE_PRELOAD=numpy,os;rm", "invalid MCP_BRIDGE_PRELOAD=\"numpy,os;rm\": \"os;rm\" is not a module name"},
		{"MCP_BRIDGE_MAX_ATTACHMENTS_TOTAL=1g", "invalid MCP_BRIDGE_MAX_ATTACHMENTS_TOTAL"},
		{"MCP_BRIDGE_PIDS=0", "invalid MCP_BRIDGE_PIDS"},
		{"MCP_BRIDGE_CPUS=x", "invalid MCP_BRIDGE_CPUS"},
		{"MCP_BRIDGE_CONTAINER_USER=nobody", "want numeric uid:gid"},
		{"MCP_BRIDGE_CONTAINER_USER=0:0", "refusing to run sandboxed code as root"},
		{"MCP_BRIDGE_LOG_LEVEL=loud", `invalid MCP_BRIDGE_LOG_LEVEL="loud": want debug, info, warn or error`},
		{"MCP_BRIDGE_WARM_CONTAINERS=99", "invalid MCP_BRIDGE_WARM_CONTAINERS"},
		{"MCP_BRIDGE_ALLOW_SELF_SERVER=maybe", "invalid MCP_BRIDGE_ALLOW_SELF_SERVER"},
		{"MCP_BRIDGE_MAX_RUNS=0", "invalid MCP_BRIDGE_MAX_RUNS"},
		{"MCP_BRIDGE_HTTP=8080", `invalid MCP_BRIDGE_HTTP="8080": want HOST:PORT`},
		{"MCP_BRIDGE_HTTP_AUTH=off", `invalid MCP_BRIDGE_HTTP_AUTH="off": want token or none`},
		{"MCP_BRIDGE_HTTP_ALLOWED_ORIGINS=https://a.example,evil", `"evil" is not an origin`},
		{"MCP_BRIDGE_HTTP_ALLOWED_ORIGINS=https://a.example/app", `is not an origin`},
		{"MCP_BRIDGE_HTTP_SHUTDOWN_GRACE=0", "invalid MCP_BRIDGE_HTTP_SHUTDOWN_GRACE"},
		{"MCP_BRIDGE_TOOLS_DENY=ok,[bad", `invalid MCP_BRIDGE_TOOLS_DENY="ok,[bad": "[bad" is not a valid glob`},
		{"MCP_BRIDGE_TOOLS_ALLOW=a[", `invalid MCP_BRIDGE_TOOLS_ALLOW="a[": "a[" is not a valid glob`},
		{"MCP_BRIDGE_READ_ONLY=sure", "invalid MCP_BRIDGE_READ_ONLY"},
		{"MCP_BRIDGE_AUDIT_MAX_SIZE=1k", `invalid MCP_BRIDGE_AUDIT_MAX_SIZE="1k": want 4k or more`},
		{"MCP_BRIDGE_AUDIT_KEEP=-1", "invalid MCP_BRIDGE_AUDIT_KEEP"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			_, err := LoadConfig([]string{tt.env}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestContainerUser checks the refusal of root and of the root group on
// parsed numbers: "00:0" is uid 0 as much as "0:0" is, "1000:00" gid 0.
func TestContainerUser(t *testing.T) {
	tests := []struct {
		user    string
		want    string // the stored uid:gid; empty when refused
		wantErr string
	}{
		{user: "65534:65534", want: "65534:65534"},
		{user: "1000:0", wantErr: "refusing to run sandboxed code in the root group"},
		{user: "1000:00", wantErr: "refusing to run sandboxed code in the root group"},
		{user: "01000:01000", want: "1000:1000"},
		{user: "0:0", wantErr: "refusing to run sandboxed code as root"},
		{user: "00:0", wantErr: "refusing to run sandboxed code as root"},
		{user: "000000:65534", wantErr: "refusing to run sandboxed code as root"},
		{user: "0:1000", wantErr: "refusing to run sandboxed code as root"},
		{user: "+0:0", wantErr: "want numeric uid:gid"},
		{user: "-0:0", wantErr: "want numeric uid:gid"},
		{user: "0x0:0", wantErr: "want numeric uid:gid"},
		{user: "0", wantErr: "want numeric uid:gid"},
		{user: "0:0:0", wantErr: "want numeric uid:gid"},
		{user: "4294967296:1", wantErr: "want numeric uid:gid"}, // past 32 bits: would wrap to 0
		{user: "root:root", wantErr: "want numeric uid:gid"},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			c, err := LoadConfig([]string{"MCP_BRIDGE_CONTAINER_USER=" + tt.user}, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadConfig(%q) = user %q, err %v; want an error containing %q", tt.user, c.ContainerUser, err, tt.wantErr)
				}
				return
			}
			if err != nil || c.ContainerUser != tt.want {
				t.Fatalf("LoadConfig(%q) = user %q, err %v; want %q", tt.user, c.ContainerUser, err, tt.want)
			}
		})
	}
}

func TestKubernetesSettings(t *testing.T) {
	for _, tt := range []struct {
		environ []string
		want    string // an error containing it, or "" for none
	}{
		{environ: []string{"MCP_BRIDGE_ENGINE=kubernetes", "MCP_BRIDGE_K8S_NAMESPACE=team-a", "MCP_BRIDGE_K8S_SECCOMP_PROFILE=profiles/codebridge.json"}},
		{environ: []string{"MCP_BRIDGE_ENGINE=k8s"}, want: "want auto, podman, docker or kubernetes"},
		{environ: []string{"MCP_BRIDGE_K8S_NAMESPACE=Team_A"}, want: "namespace name"},
		{environ: []string{"MCP_BRIDGE_K8S_NAMESPACE=-a"}, want: "namespace name"},
		{environ: []string{"MCP_BRIDGE_K8S_SECCOMP_PROFILE=/var/lib/kubelet/seccomp/x.json"}, want: "relative to the kubelet's seccomp folder"},
		{environ: []string{"MCP_BRIDGE_K8S_SECCOMP_PROFILE=../x.json"}, want: "relative to the kubelet's seccomp folder"},
		{environ: []string{"MCP_BRIDGE_K8S_WARM_POOL=Pool_1"}, want: "SandboxWarmPool name"},
	} {
		c, err := LoadConfig(tt.environ, nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.environ, err)
		case tt.want == "" && (c.Engine != EngineKubernetes || c.K8sNamespace != "team-a" || c.K8sSeccomp != "profiles/codebridge.json"):
			t.Errorf("%v: engine %q, namespace %q, seccomp %q", tt.environ, c.Engine, c.K8sNamespace, c.K8sSeccomp)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: err %v, want one containing %q", tt.environ, err, tt.want)
		}
	}
}

func TestKubernetesWarmPoolSetting(t *testing.T) {
	c, err := LoadConfig([]string{"MCP_BRIDGE_ENGINE=kubernetes", "MCP_BRIDGE_K8S_WARM_POOL=python-pool"}, nil)
	if err != nil || c.K8sWarmPool != "python-pool" {
		t.Fatalf("warm pool %q, %v", c.K8sWarmPool, err)
	}
}

// TestDerived: a setting left empty whose value was worked out says so; one
// given, even to the value it would have had, does not.
func TestDerived(t *testing.T) {
	c, err := LoadConfig(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Derived("max_sessions") || !c.Derived("max_queued") || c.Derived("timeout") {
		t.Errorf("unset: max_sessions %v, max_queued %v, timeout %v; want true, true, false", c.Derived("max_sessions"), c.Derived("max_queued"), c.Derived("timeout"))
	}
	set, err := LoadConfig([]string{"MCP_BRIDGE_MAX_SESSIONS=" + strconv.Itoa(c.MaxSessions)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if set.Derived("max_sessions") || !set.Derived("max_queued") {
		t.Errorf("max_sessions set: derived %v, max_queued %v; want false, true", set.Derived("max_sessions"), set.Derived("max_queued"))
	}
}

// TestFieldsHaveSettings: every field of Config that koanf decodes is tagged
// with the key of a setting, and every setting decodes into a field.
func TestFieldsHaveSettings(t *testing.T) {
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		if key := typ.Field(i).Tag.Get("koanf"); key != "-" && !known(key) {
			t.Errorf("Config.%s is tagged koanf:%q, which is no setting", typ.Field(i).Name, key)
		}
	}
	for _, s := range settings {
		if !fieldOf(&Config{}, s).IsValid() {
			t.Errorf("setting %s has no field", s.key)
		}
	}
}

// TestServerQueueFollowsRuns: unset, server_queue holds the 64 requests
// each run slot's sandbox has served at once, at least 256; set, it is what
// it says.
func TestServerQueueFollowsRuns(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want int
	}{
		{[]string{"MCP_BRIDGE_MAX_RUNS=2"}, 256},
		{[]string{"MCP_BRIDGE_MAX_RUNS=10"}, 640},
		{[]string{"MCP_BRIDGE_MAX_RUNS=10", "MCP_BRIDGE_SERVER_QUEUE=7"}, 7},
	} {
		c, err := LoadConfig(tt.env, nil)
		if err != nil || c.ServerQueue != tt.want {
			t.Errorf("%v: server_queue %d, %v; want %d", tt.env, c.ServerQueue, err, tt.want)
		}
	}
	if _, err := LoadConfig([]string{"MCP_BRIDGE_SERVER_CONCURRENCY=0"}, nil); err == nil || !strings.Contains(err.Error(), "want a whole number from 1 to 65536") {
		t.Errorf("server_concurrency 0: %v", err)
	}
}
