package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// oauthServer is the TypeScript SDK's example OAuth-protected MCP server with
// its demo authorization server (testdata/ts_oauth_server.mjs), on free
// loopback ports.
type oauthServer struct {
	URL    string // of the MCP endpoint, as its metadata names it
	cmd    *exec.Cmd
	stdout *syncBuffer
}

func startOAuthServer(t *testing.T) *oauthServer {
	t.Helper()
	clients := testenv.NPMClients(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "install Node.js 20 or later")
	}
	port, authPort := freePort(t), freePort(t)
	s := &oauthServer{URL: "http://localhost:" + port + "/mcp", stdout: new(syncBuffer)}
	s.cmd = exec.Command(node, filepath.Join("testdata", "ts_oauth_server.mjs"))
	s.cmd.Env = append(os.Environ(), "CODEBRIDGE_TEST_NPM_CLIENTS="+clients, "MCP_PORT="+port, "MCP_AUTH_PORT="+authPort)
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stdout
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		if t.Failed() {
			t.Logf("OAuth server output:\n%s", s.stdout.String())
		}
	})
	ready := func(u string) bool {
		resp, err := http.Get(u)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	testenv.Eventually(t, "the example OAuth server answers", func() bool {
		return ready("http://localhost:"+port+"/.well-known/oauth-protected-resource/mcp") &&
			ready("http://localhost:"+authPort+"/.well-known/oauth-authorization-server")
	})
	return s
}

// lines counts the lines the server printed that are exactly l.
func (s *oauthServer) lines(l string) int {
	n := 0
	for _, line := range strings.Split(s.stdout.String(), "\n") {
		if line == l {
			n++
		}
	}
	return n
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// storedSignIn reads and writes the sign-in codebridge keeps in the Secret
// Service for server at url.
type storedSignIn struct {
	t        *testing.T
	env      []string
	account  string
	lastSeen []string // every token read, for the leak checks
}

func (k *storedSignIn) read() map[string]any {
	k.t.Helper()
	cmd := exec.Command("secret-tool", "lookup", "service", "codebridge-oauth", "username", k.account)
	cmd.Env = k.env
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var rec map[string]any
	if err := json.Unmarshal(out, &rec); err != nil {
		k.t.Fatalf("the stored sign-in is not JSON: %v", err)
	}
	for _, f := range []string{"access_token", "refresh_token"} {
		if v, _ := rec[f].(string); v != "" {
			k.lastSeen = append(k.lastSeen, v)
		}
	}
	return rec
}

func (k *storedSignIn) write(rec map[string]any) {
	k.t.Helper()
	data, _ := json.Marshal(rec)
	cmd := exec.Command("secret-tool", "store", "--label=codebridge test", "service", "codebridge-oauth", "username", k.account)
	cmd.Env = k.env
	cmd.Stdin = strings.NewReader(string(data))
	if out, err := cmd.CombinedOutput(); err != nil {
		k.t.Fatalf("secret-tool store: %v\n%s", err, out)
	}
}

// expire makes the stored access token look expired.
func (k *storedSignIn) expire() {
	rec := k.read()
	rec["expiry"] = time.Now().Add(-time.Hour).Format(time.RFC3339)
	k.write(rec)
}

// oauthDemo is the example OAuth server configured as "demo" in a config
// folder of its own, with a Secret Service, audit contents on, and $BROWSER
// a script that records each URL it is given.
type oauthDemo struct {
	srv        *oauthServer
	dir, state string
	env        []string // codebridge's
	stored     *storedSignIn
	visits     string // the URLs the browser was given, a line each
}

// newOAuthDemo sets up an oauthDemo; with follow, its browser follows the
// authorization URL to codebridge's loopback redirect URI, as a user's
// browser does once the user approves.
func newOAuthDemo(t *testing.T, follow bool) *oauthDemo {
	t.Helper()
	busEnv := secretService(t)
	d := &oauthDemo{srv: startOAuthServer(t), dir: t.TempDir(), visits: filepath.Join(t.TempDir(), "visits")}
	writeServers(t, d.dir, "remote.json", map[string]any{"demo": map[string]any{"url": d.srv.URL}})
	browser := filepath.Join(t.TempDir(), "browser.sh")
	script := "#!/bin/sh\necho \"$1\" >> " + d.visits + "\n"
	if follow {
		script += "exec curl -fsSL -o /dev/null \"$1\"\n"
	}
	if err := os.WriteFile(browser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d.env = bridgeEnv(t, d.dir, append(busEnv, "BROWSER="+browser, "MCP_BRIDGE_AUDIT_CONTENTS=1")...)
	for _, kv := range d.env {
		if v, ok := strings.CutPrefix(kv, "MCP_BRIDGE_STATE_DIR="); ok {
			d.state = v
		}
	}
	d.stored = &storedSignIn{t: t, env: d.env, account: "demo " + d.srv.URL}
	return d
}

// browserVisits is how many URLs the browser was given.
func (d *oauthDemo) browserVisits() int {
	data, _ := os.ReadFile(d.visits)
	return strings.Count(string(data), "\n")
}

// TestOAuthEndToEnd: the TypeScript SDK's example OAuth server runs for real
// on loopback and is configured in ~/MCPs by its URL alone. codebridge login,
// with BROWSER set to a script that follows the sign-in page with curl,
// registers codebridge, signs in and keeps the tokens in the Secret Service;
// servers shows it signed in; code run through codebridge over stdio calls the
// server's greet tool; an expired access token is refreshed without the
// browser; once the server revokes the refresh token, calls fail with
// auth_required naming codebridge login, and trying again does not refresh
// again; doctor says to sign in; logout removes the sign-in. No token is
// anywhere under ~/MCPs, the state directory, codebridge's logs and output,
// or the sandbox container.
func TestOAuthEndToEnd(t *testing.T) {
	requirePodman(t)
	d := newOAuthDemo(t, true)
	srv, dir, state, env, stored, browserVisits := d.srv, d.dir, d.state, d.env, d.stored, d.browserVisits

	var output strings.Builder // everything codebridge printed
	cli := func(wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, env, "", args...)
		output.WriteString(out + errOut)
		if code != wantCode {
			t.Fatalf("codebridge %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, out, errOut)
		}
		return out + errOut
	}
	greet := func(name string) (out string, pid int) {
		t.Helper()
		cs, stderr, proc := sessionProcWith(t, env, nil)
		r := runPython(t, cs, map[string]any{"code": fmt.Sprintf(`
for attempt in range(2):
    try:
        r = await call_tool("demo", "greet", {"name": %q})
        print("OK", r)
    except MCPError as e:
        print("ERR", e.code, e.message)
`, name)})
		out = r.Out.Stdout + r.Out.Stderr
		output.WriteString(r.Text + out)
		if name == "leaks" {
			checkContainerHides(t, proc.Process.Pid, stored.lastSeen, &output)
		}
		cs.Close()
		output.WriteString(stderr.String())
		return out, proc.Process.Pid
	}

	if out, _ := greet("before"); !strings.Contains(out, "ERR auth_required") || !strings.Contains(out, "codebridge login demo") {
		t.Errorf("a call before login printed:\n%s\nwant auth_required naming codebridge login demo", out)
	}

	out := cli(0, "login", "demo")
	if !strings.Contains(out, "demo: signed in at http://localhost:") || !strings.Contains(out, "until") ||
		!strings.Contains(out, "The sign-in is kept in the OS keyring") || browserVisits() != 1 {
		t.Fatalf("codebridge login demo (browser visits %d) printed:\n%s", browserVisits(), out)
	}
	t.Logf("codebridge login demo:\n%s", out)
	rec := stored.read()
	if rec == nil || rec["access_token"] == "" || rec["refresh_token"] == "" || rec["registered"] != true {
		t.Fatalf("the Secret Service holds %v; want tokens and the registered client", rec != nil)
	}
	out = cli(0, "servers")
	if !strings.Contains(out, "sign-in") || !strings.Contains(out, "demo  signed in at http://localhost:") {
		t.Errorf("servers after login:\n%s", out)
	}
	t.Logf("codebridge servers:\n%s", out)

	if out, _ := greet("leaks"); strings.Count(out, "OK Hello, leaks!") != 2 {
		t.Errorf("calls after login printed:\n%s", out)
	}

	// An expired access token is refreshed without the browser.
	first := stored.read()["access_token"]
	stored.expire()
	if out, _ := greet("refreshed"); strings.Count(out, "OK Hello, refreshed!") != 2 {
		t.Errorf("calls with an expired token printed:\n%s", out)
	}
	after := stored.read()
	if srv.lines("REFRESH ok") != 1 || after["access_token"] == first || browserVisits() != 1 {
		t.Errorf("after expiry: %d refreshes, new token saved %v, browser visits %d; want 1 refresh, a new token, no visit",
			srv.lines("REFRESH ok"), after["access_token"] != first, browserVisits())
	}

	// The server revokes the refresh token: auth_required, and no loop.
	srv.cmd.Process.Signal(syscall.SIGUSR2)
	testenv.Eventually(t, "the server revoked its refresh tokens", func() bool { return srv.lines("REVOKED") == 1 })
	stored.expire()
	out, _ = greet("revoked")
	if strings.Count(out, "ERR auth_required") != 2 || !strings.Contains(out, "run `codebridge login demo`") {
		t.Errorf("calls after revocation printed:\n%s\nwant auth_required naming codebridge login demo, twice", out)
	}
	if srv.lines("REFRESH refused") != 1 || browserVisits() != 1 {
		t.Errorf("after revocation: %d refused refreshes, browser visits %d; want one refusal and no visit", srv.lines("REFRESH refused"), browserVisits())
	}
	if out := cli(0, "servers"); !strings.Contains(out, "demo  not signed in (if it asks for a sign-in: codebridge login demo)") {
		t.Errorf("servers after revocation:\n%s", out)
	}
	if out := cli(1, "doctor"); !strings.Contains(out, "needs a sign-in") || !strings.Contains(out, "run codebridge login demo") {
		t.Errorf("doctor after revocation:\n%s", out)
	}

	// Signing in again reuses the registered client, then logout forgets.
	cli(0, "login", "demo")
	if again := stored.read(); again["client_id"] != rec["client_id"] {
		t.Errorf("the second login registered client %v; want %v again", again["client_id"], rec["client_id"])
	}
	if out, _ := greet("again"); strings.Count(out, "OK Hello, again!") != 2 {
		t.Errorf("calls after the second login printed:\n%s", out)
	}
	if out := cli(0, "logout", "demo"); !strings.Contains(out, "signed out of demo") {
		t.Errorf("logout printed:\n%s", out)
	}
	if stored.read() != nil {
		t.Error("the sign-in is still in the Secret Service after logout")
	}
	if out, _ := greet("loggedout"); !strings.Contains(out, "ERR auth_required") {
		t.Errorf("a call after logout printed:\n%s", out)
	}

	// No token anywhere but the keyring.
	tokens := stored.lastSeen
	if len(tokens) < 6 {
		t.Fatalf("saw %d tokens; want the access and refresh tokens of each sign-in and refresh", len(tokens))
	}
	checkNoTokens(t, tokens, output.String(), dir, state)
	if audit, err := os.ReadFile(filepath.Join(state, "audit", "calls.jsonl")); err != nil || !strings.Contains(string(audit), "Hello, leaks!") {
		t.Errorf("the audit log (%v) lacks the calls", err)
	}
}

// checkNoTokens fails t if any of tokens is in a file under roots or in
// output (what codebridge printed and returned, its log, and what was read
// of its containers).
func checkNoTokens(t *testing.T, tokens []string, output string, roots ...string) {
	t.Helper()
	for _, root := range roots {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, tok := range tokens {
				if strings.Contains(string(data), tok) {
					t.Errorf("%s holds a token", path)
				}
			}
			return nil
		})
	}
	for _, tok := range tokens {
		if strings.Contains(output, tok) {
			t.Error("a token is in codebridge's output, its log, or the container")
		}
	}
}

// checkContainerHides fails t if any of values is in the configuration, the
// processes' environment or the files of the sandbox containers of the
// codebridge process pid (what a run may have written included). What it
// reads of the configuration and environment goes to output, for the caller
// to search too.
func checkContainerHides(t *testing.T, pid int, values []string, output *strings.Builder) {
	t.Helper()
	ids := containersOf(t, pid)
	if len(ids) == 0 {
		t.Fatalf("no sandbox container of codebridge (pid %d)", pid)
	}
	for _, id := range ids {
		cli := testenv.EngineCLI(t)
		inspect, err := exec.Command(cli, "inspect", id).Output()
		if err != nil {
			t.Fatalf("%s inspect: %v", cli, err)
		}
		output.Write(inspect)
		envs, _ := exec.Command(cli, "exec", id, "sh", "-c", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'").Output()
		output.Write(envs)
		// -F: a fixed string; grep's own argv is under /proc, which is
		// skipped. Unreadable files make it exit 2 where it finds nothing.
		grep := func(v string) string {
			out, err := exec.Command(cli, "exec", id, "grep", "-rlsF", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev", "-e", v, "/").Output()
			var exit *exec.ExitError
			if err != nil && (!errors.As(err, &exit) || exit.ExitCode() > 2) {
				t.Fatalf("grep in container %s: %v", id, err)
			}
			return string(out)
		}
		if found := grep("root:x:0:0"); !strings.Contains(found, "/etc/passwd") {
			t.Fatalf("grep in container %s does not find what is there: %q", id, found)
		}
		for _, v := range values {
			if found := grep(v); found != "" {
				t.Errorf("a secret is in container %s, in %s", id, found)
			}
		}
	}
}

// TestOAuthLoginWithoutKeyring: where there is no OS keyring (no D-Bus
// session), codebridge login keeps the sign-in in a 0600 file under the
// state directory's oauth folder, servers reads it from there, and logout
// removes it; the token is in no other file and not in what codebridge
// printed.
func TestOAuthLoginWithoutKeyring(t *testing.T) {
	srv := startOAuthServer(t)
	dir := t.TempDir()
	writeServers(t, dir, "remote.json", map[string]any{"demo": map[string]any{"url": srv.URL}})
	browser := filepath.Join(t.TempDir(), "browser.sh")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nexec curl -fsSL -o /dev/null \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := bridgeEnv(t, dir, "BROWSER="+browser, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	var state string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "MCP_BRIDGE_STATE_DIR="); ok {
			state = v
		}
	}
	out, errOut, code := runCLI(t, env, "", "login", "demo")
	if code != 0 || !strings.Contains(out, "The sign-in is kept in a 0600 file ("+filepath.Join(state, "oauth")) {
		t.Fatalf("login without a keyring: exit %d\n%s%s", code, out, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(state, "oauth", "*.json"))
	if len(files) != 1 {
		t.Fatalf("sign-in files %v; want one", files)
	}
	fi, _ := os.Stat(files[0])
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v; want 0600", files[0], fi.Mode().Perm())
	}
	var rec map[string]any
	data, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(data, &rec); err != nil || rec["access_token"] == "" {
		t.Fatalf("the sign-in file holds no token (%v)", err)
	}
	token := rec["access_token"].(string)
	servers, _, _ := runCLI(t, env, "", "servers")
	if !strings.Contains(servers, "demo  signed in at http://localhost:") {
		t.Errorf("servers:\n%s", servers)
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if data, err := os.ReadFile(path); err == nil && strings.Contains(string(data), token) {
			t.Errorf("%s holds the token", path)
		}
		return nil
	})
	if strings.Contains(out+errOut+servers, token) {
		t.Error("codebridge printed the token")
	}
	if out, _, code := runCLI(t, env, "", "logout", "demo"); code != 0 || !strings.Contains(out, "signed out of demo") {
		t.Errorf("logout: exit %d\n%s", code, out)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "oauth", "*.json")); len(files) != 0 {
		t.Errorf("sign-in files %v after logout; want none", files)
	}
}

// signInPlan is what testdata/ts_signin.mjs does.
type signInPlan struct {
	Modes  []string `json:"modes"`  // the elicitation modes the client declares
	Answer string   `json:"answer"` // its action for every question
	Steps  []tsStep `json:"steps"`
}

// signInResult is one line of ts_signin.mjs: connected, paused, or a
// step's result with the questions the client saw, the pages it followed
// and the completion notices it got meanwhile.
type signInResult struct {
	tsResult
	Asked []struct {
		Mode, Message, URL, ElicitationID string
	} `json:"asked"`
	Visits    []int    `json:"visits"`
	Completed []string `json:"completed"`
}

// tsSignIn runs plan through the official TypeScript client against the
// built binary. At a pause step it calls onPause with codebridge's pid.
// What codebridge printed and returned goes to output.
func tsSignIn(t *testing.T, env []string, plan signInPlan, onPause func(pid int), output *strings.Builder) []signInResult {
	t.Helper()
	results, stderr := tsPausing(t, "ts_signin.mjs", env, plan, plan.Steps, func(pid int, _ []signInResult) {
		if onPause != nil {
			onPause(pid)
		}
	})
	output.WriteString(stderr)
	for _, r := range results {
		output.WriteString(r.Text)
	}
	return results
}

// greetCode calls the demo server's greet tool and prints "OK" and its
// result, or "ERR", the MCPError's code and its message.
func greetCode(name string) string {
	return fmt.Sprintf(`
try:
    print("OK", await call_tool("demo", "greet", {"name": %q}))
except MCPError as e:
    print("ERR", e.code, e.message)
`, name)
}

// TestOAuthSignInThroughTSClient: the TypeScript SDK's example OAuth server
// runs for real on loopback, configured by its URL alone and not signed in
// to. Code run by the official TypeScript client calls its greet tool: a
// client that declared form elicitation only is not asked and gets
// auth_required naming codebridge login; a client that declared URL mode is
// asked to open the authorization page, naming the server, and declining
// gives auth_required naming the command; accepting, the client follows the
// page as a browser would, codebridge completes the sign-in it started
// (registration, PKCE, its loopback redirect URI, the Secret Service), tells
// the client the question is complete, and the code gets greet's real
// result; the next call asks nothing. codebridge opens no browser itself.
// Each sign-in question is audited, and no token is under ~/MCPs, the state
// directory, codebridge's log and output, or the sandbox container.
func TestOAuthSignInThroughTSClient(t *testing.T) {
	requirePodman(t)
	d := newOAuthDemo(t, false)
	dir, state, env, stored := d.dir, d.state, d.env, d.stored
	var output strings.Builder // everything codebridge printed and returned

	// A client without URL mode: today's auth_required, no question.
	rs := tsSignIn(t, env, signInPlan{Modes: []string{"form"}, Answer: "accept", Steps: []tsStep{{Code: greetCode("form")}}}, nil, &output)
	if out := rs[0].Out.Stdout; !strings.Contains(out, "ERR auth_required") || !strings.Contains(out, "run `codebridge login demo`") || len(rs[0].Asked) != 0 {
		t.Errorf("a client with form elicitation only was asked %d questions; the code printed:\n%s", len(rs[0].Asked), rs[0].Text)
	}

	// A client that declines: asked once, in URL mode; auth_required.
	rs = tsSignIn(t, env, signInPlan{Modes: []string{"form", "url"}, Answer: "decline", Steps: []tsStep{{Code: greetCode("declined")}}}, nil, &output)
	if out := rs[0].Out.Stdout; !strings.Contains(out, "ERR auth_required") || !strings.Contains(out, "declined to sign in") ||
		!strings.Contains(out, "run `codebridge login demo`") {
		t.Errorf("after declining, the code printed:\n%s", rs[0].Text)
	}
	if q := rs[0].Asked; len(q) != 1 || q[0].Mode != "url" || !strings.Contains(q[0].URL, "/authorize?") || !strings.Contains(q[0].URL, "code_challenge=") ||
		!strings.Contains(q[0].Message, `MCP server "demo"`) || len(rs[0].Visits) != 0 {
		t.Errorf("the declining client was asked %+v and followed %v; want one URL question naming demo", q, rs[0].Visits)
	}
	if stored.read() != nil {
		t.Fatal("a sign-in is stored after the person declined")
	}

	// A client that accepts: the code gets greet's result.
	var pid int
	rs = tsSignIn(t, env, signInPlan{Modes: []string{"form", "url"}, Answer: "accept", Steps: []tsStep{
		{Code: greetCode("signed")}, {Code: greetCode("again")}, {Pause: true},
	}}, func(p int) {
		pid = p
		stored.read()
		checkContainerHides(t, pid, stored.lastSeen, &output)
	}, &output)
	if out := rs[0].Out.Stdout; out != "OK Hello, signed!\n" {
		t.Errorf("after signing in through the client, the code printed:\n%s", rs[0].Text)
	}
	q := rs[0].Asked
	if len(q) != 1 || q[0].Mode != "url" || q[0].ElicitationID == "" || !strings.Contains(q[0].Message, "codebridge login demo") {
		t.Fatalf("the accepting client was asked %+v; want one URL question", q)
	}
	if len(rs[0].Visits) != 1 || rs[0].Visits[0] != 200 || len(rs[0].Completed) != 1 || rs[0].Completed[0] != q[0].ElicitationID {
		t.Errorf("the client followed pages %v and got completion notices %q; want one page (200) and the notice for %q", rs[0].Visits, rs[0].Completed, q[0].ElicitationID)
	}
	if out := rs[1].Out.Stdout; out != "OK Hello, again!\n" || len(rs[1].Asked) != 0 {
		t.Errorf("the next call asked %+v and printed:\n%s", rs[1].Asked, rs[1].Text)
	}
	rec := stored.read()
	if rec == nil || rec["access_token"] == "" || rec["refresh_token"] == "" || rec["registered"] != true {
		t.Fatalf("the Secret Service holds a sign-in: %v; want tokens and the registered client", rec != nil)
	}
	if n := d.browserVisits(); n != 0 {
		t.Errorf("codebridge opened a browser itself, %d times", n)
	}

	// The audit has each question's answer and the calls' outcomes.
	recs, _, err := audit.Tail(audit.Dir(state), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, strings.Join(strings.Fields(r.Kind+" "+r.Tool+" "+r.Outcome+" "+r.Confirm), " "))
	}
	want := []string{"greet auth_required", "sign_in auth_required decline", "greet auth_required", "sign_in ok accept", "greet ok", "greet ok"}
	if !slices.Equal(got, want) {
		t.Errorf("audit:\n got %q\nwant %q", got, want)
	}

	// No token anywhere but the keyring.
	checkNoTokens(t, stored.lastSeen, output.String(), dir, state)
}
