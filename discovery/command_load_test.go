package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// script writes an executable shell script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh")
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// runs counts the lines a counting script appended to log.
func runs(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// started lists the marker files that the scripts of a test created when
// they started.
func started(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "started.*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// TestLoadCommandsOncePerFileChange: a reload of an unchanged file runs none
// of its commands again, through Load's prev and through Watch; a change to
// the file runs them again; a command that failed runs again at the next
// load.
func TestLoadCommandsOncePerFileChange(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	okLog, failLog := filepath.Join(tmp, "ok.log"), filepath.Join(tmp, "fail.log")
	ok := script(t, tmp, "ok.sh", "echo run >> "+okLog+"\necho the-secret\n")
	fail := script(t, tmp, "fail.sh", "echo run >> "+failLog+"\nexit 1\n")
	a := `{"mcpServers": {"a": {"command": "srv", "env": {"T": "${cmd:` + ok + `}"}}}}`
	writeFiles(t, dir, map[string]string{
		"a.json": a,
		"b.json": `{"mcpServers": {"b": {"command": "srv"}}}`,
		"c.json": `{"mcpServers": {"c": {"command": "srv", "env": {"T": "${cmd:` + fail + `}"}}}}`,
	})
	// The watcher may reload more than once for one change (a rename is
	// two events), and each reload runs the failing command again: past
	// the first two loads, failRuns is at least what it must be.
	check := func(cfg *Config, okRuns, failRuns int, when string) {
		t.Helper()
		if s := cfg.Server("a"); s == nil || s.Env["T"] != "the-secret" {
			t.Errorf("%s: a = %+v, want T resolved (problems %v)", when, s, cfg.Problems)
		}
		if got := runs(t, okLog); got != okRuns {
			t.Errorf("%s: a's command ran %d times, want %d", when, got, okRuns)
		}
		if got := runs(t, failLog); got != failRuns && (failRuns <= 2 || got < failRuns) {
			t.Errorf("%s: c's failing command ran %d times, want %d", when, got, failRuns)
		}
	}

	first := Load(dir, nil, testEnv)
	check(first, 1, 1, "first load")
	again := Load(dir, first, testEnv)
	check(again, 1, 2, "reload without change")

	// The watcher reloads with its last snapshot as prev: a change to
	// another file runs none of a.json's commands.
	ch := watching(t, dir, WatchOptions{Options: testEnv, Initial: again})
	writeAtomic(t, dir, "b.json", `{"mcpServers": {"b": {"command": "srv2"}}}`)
	watched := await(t, ch, "b's new command", command("b", "srv2"))
	check(watched, 1, 3, "watched reload after b.json changed")
	failed := runs(t, failLog)

	// A change to a.json (its size too, so even a coarse mtime differs)
	// runs its command again.
	writeAtomic(t, dir, "a.json", strings.Replace(a, `"srv"`, `"srv", "description": "changed"`, 1))
	changed := await(t, ch, "a's new description", func(c *Config) bool {
		s := c.Server("a")
		return s != nil && s.Description == "changed"
	})
	check(changed, 2, failed+1, "watched reload after a.json changed")
}

// TestLoadCommandsParallel: the commands of one load run at the same time:
// each waits until the test has seen four of them start, which a load that
// runs them one by one never reaches.
func TestLoadCommandsParallel(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	wait := script(t, tmp, "wait.sh", `touch "$1/started.$2"
while [ ! -e "$1/go" ]; do sleep 0.01; done
echo "secret-$2"
`)
	var b strings.Builder
	b.WriteString(`{"mcpServers": {`)
	for i := range 5 {
		fmt.Fprintf(&b, `"s%d": {"command": "srv", "env": {"T": "${cmd:%s %s %d}"}},`, i, wait, tmp, i)
	}
	b.WriteString(`"plain": {"command": "srv"}}}`)
	writeFiles(t, dir, map[string]string{"s.json": b.String()})

	done := make(chan *Config, 1)
	go func() { done <- Load(dir, nil, testEnv) }()
	testenv.Eventually(t, "four commands run at once", func() bool { return started(t, tmp) >= 4 })
	if err := os.WriteFile(filepath.Join(tmp, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := <-done
	for i := range 5 {
		if s := cfg.Server(fmt.Sprintf("s%d", i)); s == nil || s.Env["T"] != fmt.Sprintf("secret-%d", i) {
			t.Errorf("s%d = %+v, want its secret (problems %v)", i, s, cfg.Problems)
		}
	}
}

// TestLoadCommandsBudget: when the commands of one load outlast the load's
// budget, the ones still running and the ones not started fail with an
// error naming the budget; the rest of the folder loads; no more than four
// commands ever run at once.
func TestLoadCommandsBudget(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	hang := script(t, tmp, "hang.sh", `touch "$1/started.$2"
exec sleep 60
`)
	var b strings.Builder
	b.WriteString(`{"mcpServers": {`)
	for i := range 5 {
		fmt.Fprintf(&b, `"s%d": {"command": "srv", "env": {"T": "${cmd:%s %s %d}"}},`, i, hang, tmp, i)
	}
	b.WriteString(`"plain": {"command": "srv"}}}`)
	writeFiles(t, dir, map[string]string{"s.json": b.String()})

	opts := testEnv
	opts.CommandBudget = time.Second
	cfg := Load(dir, nil, opts)
	if cfg.Server("plain") == nil {
		t.Errorf("plain did not load: %v", cfg.Problems)
	}
	problems := map[string]string{}
	for _, p := range cfg.Problems {
		problems[p.Server] = p.String()
	}
	for i := range 5 {
		name := fmt.Sprintf("s%d", i)
		p := problems[name]
		if cfg.Server(name) != nil || !strings.Contains(p, "s.json") || !strings.Contains(p, `server "`+name+`"`) ||
			!strings.Contains(p, "1s budget") {
			t.Errorf("%s: server %v, problem %q; want it not loaded, its problem naming the file, the server and the 1s budget", name, cfg.Server(name), p)
		}
	}
	if n := started(t, tmp); n > 4 {
		t.Errorf("%d commands started; want at most 4: four run at a time, and none starts once the budget is spent", n)
	}
}
