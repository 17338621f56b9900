package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in scripts/npm/clients) runs each of its client auth scenarios with
// codebridge as the client: the suite starts the scenario's MCP server and
// authorization server on loopback and runs the test binary as its client
// command (conformanceClientEnv), which puts that server in a temporary
// config folder, signs in with codebridge login (the test binary again as
// the browser, conformanceBrowserEnv) and calls the server's tools through
// codebridge exec, in the sandbox. The suite checks what codebridge sent.
const (
	// conformanceClientEnv, set to the codebridge binary, makes the test
	// binary the suite's client: its last argument is the scenario server's
	// URL; MCP_CONFORMANCE_CONTEXT may name a pre-registered client.
	conformanceClientEnv = "CODEBRIDGE_TEST_CONFORMANCE_CLIENT"
	// conformanceBrowserEnv makes the test binary the browser of codebridge
	// login: it follows the authorization URL, its only argument, as a
	// user's browser does once the user approves.
	conformanceBrowserEnv = "CODEBRIDGE_TEST_CONFORMANCE_BROWSER"
)

// conformanceVersion is the suite's version in scripts/npm/clients.
const conformanceVersion = "0.1.16"

// conformanceClientMetadataURL is the Client ID Metadata Document URL the
// suite expects a client to sign in as (auth/basic-cimd); its authorization
// servers do not fetch it.
const conformanceClientMetadataURL = "https://conformance-test.local/client-metadata.json"

// conformanceUnsupported are the suite's client auth scenarios that go-sdk,
// whose auth package codebridge signs in with, lists as unsupported in its
// conformance/baseline.yml (v1.8.0), with the reason. They are skipped.
var conformanceUnsupported = map[string]string{
	"auth/client-credentials-basic": "the client credentials grant (a machine signing in as itself, no user), " +
		"which go-sdk v1.8.0 does not implement (its baseline lists auth/client-credentials-basic)",
	"auth/client-credentials-jwt": "the client credentials grant with a JWT client assertion, " +
		"which go-sdk v1.8.0 does not implement (its baseline lists auth/client-credentials-jwt)",
	"auth/cross-app-access-complete-flow": "cross-app access (SEP-990, an identity provider's ID-JAG exchanged for a token), " +
		"which go-sdk v1.8.0 does not implement (its baseline lists it under the name later suites give it, " +
		"auth/enterprise-managed-authorization)",
}

// conformanceSuiteBugs are client auth scenarios of this suite version
// that no client following the specs passes, with the reason: they run, and
// must fail as described (want is in the suite's output); one that passes
// is an error, to be removed from here.
var conformanceSuiteBugs = map[string]struct{ why, want string }{
	"auth/2025-03-26-oauth-metadata-backcompat": {
		why: "the scenario serves its authorization server metadata at the root's well-known address with issuer " +
			"ROOT/oauth, and RFC 8414 (section 3.3) has a client refuse metadata whose issuer is not the one it " +
			"asked; go-sdk v1.8.0's auth package refuses it, and so fails go-sdk's own conformance client. " +
			"Later suites (0.2.0-alpha.11) name the root as the issuer.",
		want: "does not match issuer URL",
	},
}

// TestConformanceClientAuth runs every client auth scenario of the official
// MCP conformance suite with codebridge as the client, as described above,
// and fails on any scenario that fails, but for those of
// conformanceUnsupported (skipped) and conformanceSuiteBugs (which must fail
// as described there).
func TestConformanceClientAuth(t *testing.T) {
	t.Parallel() // each scenario waits on the suite's node process, which listens on a port of its own
	requirePodman(t)
	conformance := conformanceSuite(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(self, " \t") {
		t.Fatalf("the test binary's path %q has a space, and the suite splits its client command at spaces: set GOTMPDIR to a folder without", self)
	}

	out, err := conformance("list", "--client").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --client: %v\n%s", err, out)
	}
	var scenarios []string
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), " ")
		if strings.HasPrefix(name, "auth/") {
			scenarios = append(scenarios, name)
		}
	}
	if len(scenarios) == 0 {
		t.Fatalf("conformance list --client names no auth scenarios:\n%s", out)
	}
	for name := range conformanceUnsupported {
		if !slices.Contains(scenarios, name) {
			t.Errorf("conformanceUnsupported names %s, which the suite does not have: remove it", name)
		}
	}
	for name := range conformanceSuiteBugs {
		if !slices.Contains(scenarios, name) {
			t.Errorf("conformanceSuiteBugs names %s, which the suite does not have: remove it", name)
		}
	}

	codebridge := binary(t)
	for _, scenario := range scenarios {
		t.Run(strings.TrimPrefix(scenario, "auth/"), func(t *testing.T) {
			if why, ok := conformanceUnsupported[scenario]; ok {
				t.Skipf("unsupported: %s", why)
			}
			cmd := conformance("client", "--command", self, "--scenario", scenario, "--timeout", "120000")
			cmd.Env = append(os.Environ(), conformanceClientEnv+"="+codebridge, "MCP_BRIDGE_IMAGE="+testenv.Image())
			out, err := cmd.CombinedOutput()
			passed := err == nil && strings.Contains(string(out), "OVERALL: PASSED")
			if bug, ok := conformanceSuiteBugs[scenario]; ok {
				switch {
				case passed:
					t.Fatalf("%s passes now: remove it from conformanceSuiteBugs\n%s", scenario, out)
				case strings.Contains(string(out), bug.want):
					t.Skipf("fails as expected, a defect of suite %s: %s", conformanceVersion, bug.why)
				}
			}
			if !passed {
				t.Fatalf("conformance client --scenario %s failed (%v):\n%s", scenario, err, out)
			}
			t.Logf("%s passed", scenario)
		})
	}
}

// conformanceSuite returns how to run the official MCP conformance suite
// with args, on Node 20 too (conformance_hooks.mjs), in a folder of its own.
func conformanceSuite(t *testing.T) func(args ...string) *exec.Cmd {
	t.Helper()
	clients := testenv.NPMClients(t)
	suite := filepath.Join(clients, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		testenv.Missing(t, "the MCP conformance suite "+conformanceVersion, "run scripts/test.sh, which installs scripts/npm/clients with npm ci")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "install Node.js 20 or later")
	}
	hooks, err := filepath.Abs(filepath.Join("testdata", "conformance_hooks.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	return func(args ...string) *exec.Cmd {
		cmd := exec.Command(node, append([]string{"--import", hooks, suite}, args...)...)
		cmd.Dir = t.TempDir() // the suite's, and its client's, working folder
		return cmd
	}
}

// conformanceServerNotApplicable names the conformance suite's server
// scenarios that do not apply to codebridge, a server with one tool and one
// resource: each calls tools, resources or prompts of the suite's own test
// server, or a capability codebridge does not offer.
var conformanceServerNotApplicable = map[string]string{
	"completion-complete":           "needs the completions capability (argument completion for prompts and resource templates); codebridge has neither",
	"tools-call-simple-text":        "calls the suite's test tool test_simple_text",
	"tools-call-image":              "calls the suite's test tool test_image_content",
	"tools-call-audio":              "calls the suite's test tool test_audio_content",
	"tools-call-embedded-resource":  "calls the suite's test tool test_embedded_resource",
	"tools-call-mixed-content":      "calls the suite's test tool test_multiple_content_types",
	"tools-call-with-logging":       "calls the suite's test tool test_tool_with_logging",
	"tools-call-error":              "calls the suite's test tool test_error_handling",
	"tools-call-with-progress":      "calls the suite's test tool test_tool_with_progress",
	"tools-call-sampling":           "calls the suite's test tool test_sampling",
	"tools-call-elicitation":        "calls the suite's test tool test_elicitation",
	"json-schema-2020-12":           "lists the suite's test tool json_schema_2020_12_tool",
	"elicitation-sep1034-defaults":  "calls the suite's test tool test_elicitation_sep1034_defaults",
	"elicitation-sep1330-enums":     "calls the suite's test tool test_elicitation_sep1330_enums",
	"resources-read-text":           "reads the suite's test resource test://static-text",
	"resources-read-binary":         "reads the suite's test resource test://static-binary",
	"resources-templates-read":      "reads the suite's test resource template test://template/{id}/data",
	"resources-subscribe":           "subscribes to the suite's test resource; codebridge's manual never changes, so it offers no subscriptions",
	"resources-unsubscribe":         "unsubscribes from the suite's test resource; codebridge offers no subscriptions",
	"prompts-get-simple":            "gets the suite's test prompt test_simple_prompt; codebridge has no prompts",
	"prompts-get-with-args":         "gets the suite's test prompt test_prompt_with_arguments",
	"prompts-get-embedded-resource": "gets the suite's test prompt test_prompt_with_embedded_resource",
	"prompts-get-with-image":        "gets the suite's test prompt test_prompt_with_image",
}

// conformanceNotApplicableChecks are single checks of applicable scenarios
// that need the suite's own test server, with the status they get here.
var conformanceNotApplicableChecks = map[string]string{
	// It calls the suite's tool test_reconnection, which closes the stream
	// before answering; codebridge answers "unknown tool" at once, so there is
	// no result to resume. TestHTTPResumeAfterCut cuts a real run instead.
	"server-sse-disconnect-resume": "WARNING",
}

// TestConformanceServer runs the official MCP conformance suite's server
// scenarios against codebridge serve --http: every scenario that applies to
// a server with one tool passes with no warning, and the suite's list of
// scenarios is checked against the ones known not to apply, so a new one is
// noticed.
func TestConformanceServer(t *testing.T) {
	conformance := conformanceSuite(t)
	out, err := conformance("list", "--server").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --server: %v\n%s", err, out)
	}
	var scenarios []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			name, _, _ = strings.Cut(name, " ")
			scenarios = append(scenarios, name)
		}
	}
	for name := range conformanceServerNotApplicable {
		if !slices.Contains(scenarios, name) {
			t.Errorf("conformanceServerNotApplicable names %s, which the suite does not have: remove it", name)
		}
	}
	// The suite sends no token: codebridge listens on loopback without one.
	b := startHTTP(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_HTTP_AUTH=none", "MCP_BRIDGE_MEMORY=128m"))
	for _, scenario := range scenarios {
		t.Run(scenario, func(t *testing.T) {
			if why, ok := conformanceServerNotApplicable[scenario]; ok {
				t.Skipf("does not apply: %s", why)
			}
			dir := t.TempDir()
			cmd := conformance("server", "--url", b.URL, "--scenario", scenario, "-o", dir)
			out, err := cmd.CombinedOutput()
			files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
			if len(files) != 1 {
				t.Fatalf("conformance server --scenario %s (%v) left %d checks.json files:\n%s", scenario, err, len(files), out)
			}
			raw, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var checks []struct{ ID, Status, ErrorMessage string }
			if err := json.Unmarshal(raw, &checks); err != nil {
				t.Fatalf("%s: %v", files[0], err)
			}
			for _, c := range checks {
				want, special := conformanceNotApplicableChecks[c.ID]
				switch {
				case special && c.Status != want:
					t.Errorf("check %s: %s, want %s (it needs the suite's own test server): update conformanceNotApplicableChecks", c.ID, c.Status, want)
				case !special && c.Status != "SUCCESS" && c.Status != "INFO":
					t.Errorf("check %s: %s %s", c.ID, c.Status, c.ErrorMessage)
				}
			}
			if t.Failed() {
				t.Logf("suite output:\n%s", out)
			}
		})
	}
}

// runConformanceClient is the conformance suite's client (see
// conformanceClientEnv): it signs codebridge in to the scenario's server and
// calls every tool the server lists, and returns the exit status.
func runConformanceClient() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "conformance client: "+format+"\n", args...)
		return 1
	}
	if len(os.Args) < 2 {
		return fail("want the server's URL as the last argument")
	}
	url := os.Args[len(os.Args)-1]
	dir, err := os.MkdirTemp("", "codebridge-conformance-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(dir)

	// The scenario's server, in a config folder of its own, with the client
	// the scenario pre-registered if it did.
	entry := map[string]any{"url": url}
	var given struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		if err := json.Unmarshal([]byte(c), &given); err != nil {
			return fail("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	if given.ClientID != "" {
		entry["oauth"] = map[string]any{"clientId": given.ClientID, "clientSecret": given.ClientSecret}
	}
	configDir, stateDir := filepath.Join(dir, "MCPs"), filepath.Join(dir, "state")
	raw, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"conformance": entry}})
	settingsFile := filepath.Join(dir, "config.toml")
	for _, d := range []string{configDir, stateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fail("%v", err)
		}
	}
	if err := os.WriteFile(filepath.Join(configDir, "conformance.json"), raw, 0o600); err != nil {
		return fail("%v", err)
	}
	if err := os.WriteFile(settingsFile, nil, 0o600); err != nil {
		return fail("%v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fail("%v", err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MCP_BRIDGE_") && !strings.HasPrefix(kv, "MCP_BRIDGE_IMAGE=")
	})
	env = append(env,
		settings.FileEnv+"="+settingsFile,
		"MCP_BRIDGE_CONFIG_DIR="+configDir,
		"MCP_BRIDGE_STATE_DIR="+stateDir,
		"MCP_BRIDGE_LOG_LEVEL=debug",
		// The document the suite's authorization servers take as
		// codebridge's where they advertise Client ID Metadata Document
		// support (auth/basic-cimd); the others are registered with.
		"MCP_BRIDGE_OAUTH_CLIENT_METADATA_URL="+conformanceClientMetadataURL,
		"BROWSER="+self,
		conformanceBrowserEnv+"=1",
		// No OS keyring: the sign-in goes to a file in stateDir, removed
		// with it, not into the keyring of the machine running the tests.
		"DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(dir, "no-bus"),
	)
	run := func(stdin string, args ...string) error {
		cmd := exec.Command(os.Getenv(conformanceClientEnv), args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		fmt.Fprintf(os.Stderr, "conformance client: codebridge %s\n", strings.Join(args, " "))
		return cmd.Run()
	}
	// The code exits with authRequired when a call fails with MCPError
	// auth_required, whose message says to run codebridge login again
	// (the server asks for more scopes, say). The client does so once, as
	// a user would.
	const authRequired = 3
	code := fmt.Sprintf(`
import sys
try:
    tools = await list_tools("conformance")
    print("tools:", [t["name"] for t in tools])
    for t in tools:
        print(t["name"], "->", await call_tool("conformance", t["name"], {}))
except MCPError as e:
    if e.code != "auth_required":
        raise
    print("auth_required:", e.message)
    sys.exit(%d)
`, authRequired)
	for attempt := 1; ; attempt++ {
		if err := run("", "login", "--timeout", "60s", "conformance"); err != nil {
			return fail("codebridge login: %v", err)
		}
		err := run(code, "exec", "--timeout", "60s", "-")
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == authRequired && attempt < 2 {
			continue
		}
		if err != nil {
			return fail("codebridge exec: %v", err)
		}
		return 0
	}
}

// runConformanceBrowser follows the authorization URL, its last argument,
// to codebridge's redirect URI (see conformanceBrowserEnv).
func runConformanceBrowser() int {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "conformance browser: want the URL to open")
		return 2
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(os.Args[len(os.Args)-1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance browser:", err)
		return 1
	}
	resp.Body.Close()
	return 0
}
