package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/dirlock"
)

func rec(tool string) Record {
	return Record{Time: time.Now(), Session: "s1", Run: 1, Server: "srv", Tool: tool, Outcome: OutcomeOK, ArgBytes: 2, ResultBytes: 10}
}

// lines reads every line of every file in dir, checking each is a record.
func lines(t *testing.T, dir string) (tools []string, perFile map[string]int64) {
	t.Helper()
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	perFile = map[string]int64{}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		perFile[filepath.Base(path)] = int64(len(data))
		for line := range strings.Lines(string(data)) {
			var r Record
			if err := json.Unmarshal([]byte(line), &r); err != nil || !strings.HasSuffix(line, "\n") {
				t.Fatalf("%s: line %q is not a whole record: %v", path, line, err)
			}
			tools = append(tools, r.Tool)
		}
	}
	return tools, perFile
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	const maxSize = 1000
	l := New(dir, Options{MaxSize: maxSize, Keep: 2})
	for i := range 60 {
		if err := l.Write(rec(fmt.Sprintf("t%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	tools, sizes := lines(t, dir)
	if len(sizes) != 3 {
		t.Errorf("files %v, want calls.jsonl and two rotated ones", sizes)
	}
	for name, size := range sizes {
		if size > maxSize {
			t.Errorf("%s is %d bytes, over the %d limit", name, size, maxSize)
		}
	}
	// The newest calls are kept, in order, with nothing missing between them.
	if len(tools) == 0 || tools[len(tools)-1] != "t59" {
		t.Fatalf("kept %v, want them to end with t59", tools)
	}
	first, _ := strconv.Atoi(strings.TrimPrefix(tools[0], "t"))
	for i, tool := range tools {
		if want := fmt.Sprintf("t%02d", first+i); tool != want {
			t.Fatalf("record %d is %s, want %s: %v", i, tool, want, tools)
		}
	}
	if first == 0 {
		t.Errorf("nothing was dropped with Keep 2: %v", tools)
	}
	// Tail reads across the files, oldest first.
	recs, skipped, err := Tail(dir, 5, nil)
	if err != nil || skipped != 0 || len(recs) != 5 || recs[0].Tool != "t55" || recs[4].Tool != "t59" {
		t.Errorf("Tail(5) = %d records from %v, skipped %d, err %v", len(recs), recs, skipped, err)
	}

	// Keep 0: the full file is started afresh.
	dir0 := t.TempDir()
	l0 := New(dir0, Options{MaxSize: maxSize, Keep: 0})
	for i := range 30 {
		l0.Write(rec(fmt.Sprintf("t%02d", i)))
	}
	if tools, sizes := lines(t, dir0); len(sizes) != 1 || tools[len(tools)-1] != "t29" {
		t.Errorf("Keep 0: files %v, tools %v", sizes, tools)
	}
}

// TestFolderRemoved: a write after the audit folder was removed (a user
// cleaning up) makes it again and loses nothing.
func TestFolderRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	l := New(dir, Options{})
	if err := l.Write(rec("before")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(rec("after")); err != nil {
		t.Fatalf("write after the folder was removed: %v", err)
	}
	if tools, _ := lines(t, dir); len(tools) != 1 || tools[0] != "after" {
		t.Errorf("records %v, want [after]", tools)
	}
	// Another process's lock on the new folder excludes this one again:
	// the record waits in the queue until it is released.
	unlock, err := dirlock.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	l.Record(rec("later"))
	if tools, _ := lines(t, dir); len(tools) != 1 {
		t.Fatalf("records %v while another writer held the folder's lock, want only [after]", tools)
	}
	unlock()
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if tools, _ := lines(t, dir); len(tools) != 2 || tools[1] != "later" {
		t.Errorf("records %v, want [after later]", tools)
	}
}

// TestConcurrentWriters: goroutines of this process and two other processes
// write to one folder while it rotates; every line is whole and none is lost.
func TestConcurrentWriters(t *testing.T) {
	if os.Getenv("AUDIT_TEST_WRITER") != "" {
		return // the helper process's own run of this test: see TestWriterProcess
	}
	dir := t.TempDir()
	const perWriter, maxSize = 200, 16 << 10
	opts := Options{MaxSize: maxSize, Keep: 100} // enough to keep everything
	var procs []*exec.Cmd
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriterProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AUDIT_TEST_WRITER="+dir, fmt.Sprintf("AUDIT_TEST_PREFIX=p%d-", p), fmt.Sprintf("AUDIT_TEST_N=%d", perWriter))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		l := New(dir, opts) // one Log each, as separate parts of a program might
		wg.Go(func() {
			for i := range perWriter {
				if err := l.Write(rec(fmt.Sprintf("g%d-%d", g, i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, cmd := range procs {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}
	tools, sizes := lines(t, dir)
	if want := 6 * perWriter; len(tools) != want {
		t.Errorf("%d records, want %d", len(tools), want)
	}
	seen := map[string]bool{}
	for _, tool := range tools {
		if seen[tool] {
			t.Errorf("%s recorded twice", tool)
		}
		seen[tool] = true
	}
	if len(sizes) < 3 {
		t.Errorf("files %v: the test wanted rotations under concurrency", sizes)
	}
	for name, size := range sizes {
		if size > maxSize {
			t.Errorf("%s is %d bytes, over the %d limit", name, size, maxSize)
		}
	}
}

// TestWriterProcess is the other process of TestConcurrentWriters.
func TestWriterProcess(t *testing.T) {
	dir := os.Getenv("AUDIT_TEST_WRITER")
	if dir == "" {
		t.Skip("helper of TestConcurrentWriters")
	}
	n, _ := strconv.Atoi(os.Getenv("AUDIT_TEST_N"))
	l := New(dir, Options{MaxSize: 16 << 10, Keep: 100})
	for i := range n {
		if err := l.Write(rec(fmt.Sprintf("%s%d", os.Getenv("AUDIT_TEST_PREFIX"), i))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecordContentsAndErrors(t *testing.T) {
	for _, contents := range []bool{false, true} {
		dir := t.TempDir()
		l := New(dir, Options{Contents: contents})
		r := rec("echo")
		r.Arguments, r.Result = json.RawMessage(`{"message":"secret"}`), json.RawMessage(`{"content":[]}`)
		r.Outcome, r.Error = "policy_denied", strings.Repeat("é", 400)+"\nsecond line"
		l.Record(r)
		data, err := os.ReadFile(l.Path())
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(data), "secret"); got != contents {
			t.Errorf("contents=%v: arguments recorded = %v: %s", contents, got, data)
		}
		recs, _, err := Tail(dir, 0, nil)
		if err != nil || len(recs) != 1 {
			t.Fatalf("Tail: %v %v", recs, err)
		}
		got := recs[0]
		if len(got.Error) > maxError+len("…") || strings.Contains(got.Error, "second") || !strings.HasSuffix(got.Error, "…") || !json.Valid([]byte(`"`+got.Error+`"`)) {
			t.Errorf("error not shortened to one valid line: %q", got.Error)
		}
		if got.Time.Location() != time.UTC || got.Session != "s1" || got.Outcome != "policy_denied" {
			t.Errorf("record read back: %+v", got)
		}
	}
}

func TestTailFiltersAndSkips(t *testing.T) {
	dir := t.TempDir()
	l := New(dir, Options{})
	for i := range 10 {
		r := rec(fmt.Sprint(i))
		if i%2 == 1 {
			r.Server = "other"
		}
		l.Write(r)
	}
	f, _ := os.OpenFile(l.Path(), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time":"2026-01-01T00:00:00Z","tool":"cut sh`) // a crash mid-line
	f.Close()
	recs, skipped, err := Tail(dir, 3, func(r *Record) bool { return r.Server == "other" })
	if err != nil || skipped != 1 {
		t.Fatalf("skipped %d, err %v", skipped, err)
	}
	var tools []string
	for _, r := range recs {
		tools = append(tools, r.Tool)
	}
	if strings.Join(tools, ",") != "5,7,9" {
		t.Errorf("last 3 of server other = %v, want 5,7,9", tools)
	}
	if recs, _, _ := Tail(t.TempDir(), 3, nil); len(recs) != 0 {
		t.Errorf("empty folder: %v", recs)
	}
}

// BenchmarkRecord is the cost a tool call pays for its audit line.
func BenchmarkRecord(b *testing.B) {
	l := New(b.TempDir(), Options{})
	r := rec("echo")
	for b.Loop() {
		l.Record(r)
	}
}
