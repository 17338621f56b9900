package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return string(e.Code)
	}
	return ""
}

func TestMemoryRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := New(dir)
	if err := s.Save("plan", json.RawMessage(`{"steps":[1,2]}`), json.RawMessage(`{"by":"agent"}`)); err != nil {
		t.Fatal(err)
	}
	// Another process (a restart) sees it.
	m, ok, err := New(dir).Load("plan")
	if err != nil || !ok || string(m.Value) != `{"steps":[1,2]}` || string(m.Metadata) != `{"by":"agent"}` || m.Bytes != 15 || m.Rev != 1 {
		t.Fatalf("Load = %+v %v %v", m, ok, err)
	}
	if m.Created.IsZero() || !m.Created.Equal(m.Updated) {
		t.Errorf("first save: created %v, updated %v", m.Created, m.Updated)
	}
	if err := s.Save("plan", json.RawMessage(`[]`), nil); err != nil {
		t.Fatal(err)
	}
	m2, _, _ := s.Load("plan")
	if m2.Rev != 2 || !m2.Created.Equal(m.Created) || m2.Updated.Before(m.Updated) || m2.Metadata != nil {
		t.Errorf("second save: %+v, want rev 2, the first creation time, no metadata", m2)
	}
	if ok, err := s.Exists("plan"); !ok || err != nil {
		t.Errorf("Exists = %v %v", ok, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Key != "plan" || list[0].Value != nil || list[0].Bytes != 2 {
		t.Errorf("List = %+v %v", list, err)
	}
	if existed, err := s.Delete("plan"); !existed || err != nil {
		t.Errorf("Delete = %v %v", existed, err)
	}
	if _, ok, _ := s.Load("plan"); ok {
		t.Error("deleted memory still loads")
	}
	if ok, _ := s.Exists("plan"); ok {
		t.Error("deleted memory still exists")
	}
	if existed, _ := s.Delete("plan"); existed {
		t.Error("second Delete says it existed")
	}
}

func TestMemoryKeys(t *testing.T) {
	s := New(t.TempDir())
	for _, key := range []string{"../../etc/passwd", "a/b", `C:\x`, "ключ", ".", ".lock", "with space", strings.Repeat("k", MaxKey)} {
		if err := s.Save(key, json.RawMessage(`1`), nil); err != nil {
			t.Errorf("Save(%q): %v", key, err)
			continue
		}
		if m, ok, err := s.Load(key); !ok || err != nil || m.Key != key {
			t.Errorf("Load(%q) = %+v %v %v", key, m, ok, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(s.Dir(), "memory"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 9 { // 8 memories and the lock
		t.Errorf("files %q for 8 keys; a key named a path outside the folder?", names)
	}
	if list, _ := s.List(); len(list) != 8 {
		t.Errorf("List has %d memories, want 8", len(list))
	}
	for _, key := range []string{"", strings.Repeat("k", MaxKey+1), "tab\there", "nl\n", "bad\xffutf8"} {
		if err := s.Save(key, json.RawMessage(`1`), nil); code(err) != "bad_arguments" {
			t.Errorf("Save(%q) = %v, want bad_arguments", key, err)
		}
		if _, _, err := s.Load(key); code(err) != "bad_arguments" {
			t.Errorf("Load(%q) = %v, want bad_arguments", key, err)
		}
	}
	for _, v := range []string{`{not json`, ``} {
		if err := s.Save("k", json.RawMessage(v), nil); code(err) != "bad_arguments" {
			t.Errorf("value %q: %v", v, err)
		}
	}
}

func TestMemoryLimits(t *testing.T) {
	s := NewWithLimits(t.TempDir(), Limits{Value: 1 << 10, Total: 8 << 10})
	big := json.RawMessage(`"` + strings.Repeat("x", 1<<10) + `"`)
	if err := s.Save("big", big, nil); code(err) != "too_large" || !strings.Contains(err.Error(), "over the 1 KiB limit of one memory") {
		t.Errorf("over one value's limit: %v", err)
	}
	almost := json.RawMessage(`"` + strings.Repeat("x", 1<<10-2) + `"`)
	i := 0
	for ; i < 100; i++ { // each file is its value plus a small envelope
		if err := s.Save("k"+strconv.Itoa(i), almost, nil); err != nil {
			if code(err) != "too_large" || !strings.Contains(err.Error(), "over the 8 KiB total") {
				t.Fatalf("save %d: %v", i, err)
			}
			break
		}
	}
	if i < 6 || i > 7 {
		t.Errorf("the total stopped saves after %d memories of 1 KiB, want 6 or 7 in 8 KiB", i)
	}
	// Replacing a key does not count its old value twice.
	if err := s.Save("k0", almost, nil); err != nil {
		t.Errorf("replacing at the total: %v", err)
	}
	// Deleting makes room.
	s.Delete("k1")
	if err := s.Save("k"+strconv.Itoa(i), almost, nil); err != nil {
		t.Errorf("after a delete: %v", err)
	}
	if err := s.Save("meta", json.RawMessage(`1`), json.RawMessage(`"`+strings.Repeat("m", MaxMetadata)+`"`)); code(err) != "too_large" {
		t.Errorf("huge metadata: %v", err)
	}
}

func TestDefaultLimitsInMessages(t *testing.T) {
	s := New(t.TempDir())
	big := json.RawMessage(`"` + strings.Repeat("x", MaxValue) + `"`)
	if err := s.Save("big", big, nil); code(err) != "too_large" || !strings.Contains(err.Error(), "1048578 bytes (1.0 MiB) of JSON, over the 1 MiB limit") {
		t.Errorf("over the default limit: %v", err)
	}
}

func TestSaveIf(t *testing.T) {
	s := New(t.TempDir())
	if err := s.SaveIf("n", json.RawMessage(`1`), nil, 1); code(err) != "conflict" {
		t.Errorf("SaveIf(rev 1) of a missing key = %v, want conflict", err)
	}
	if err := s.SaveIf("n", json.RawMessage(`1`), nil, 0); err != nil {
		t.Fatalf("SaveIf(rev 0) of a missing key: %v", err)
	}
	if err := s.SaveIf("n", json.RawMessage(`2`), nil, 0); code(err) != "conflict" || !strings.Contains(err.Error(), "changed meanwhile") {
		t.Errorf("SaveIf(rev 0) of an existing key = %v, want conflict", err)
	}
	if err := s.SaveIf("n", json.RawMessage(`2`), nil, 1); err != nil {
		t.Errorf("SaveIf(current rev): %v", err)
	}
	if m, _, _ := s.Load("n"); string(m.Value) != "2" || m.Rev != 2 {
		t.Errorf("after SaveIf: %+v", m)
	}
	// After a delete the key starts again from revision 0.
	s.Delete("n")
	if err := s.SaveIf("n", json.RawMessage(`3`), nil, 0); err != nil {
		t.Errorf("SaveIf(0) after delete: %v", err)
	}
}

// increment adds 1 to the number under key n times, by load and SaveIf.
func increment(s *Store, key string, n int) error {
	for range n {
		for {
			m, _, err := s.Load(key)
			if err != nil {
				return err
			}
			var v int
			if m.Value != nil {
				json.Unmarshal(m.Value, &v)
			}
			err = s.SaveIf(key, json.RawMessage(strconv.Itoa(v+1)), nil, m.Rev)
			if code(err) == "conflict" {
				continue
			}
			if err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// TestMemoryConcurrent: concurrent writers of one key leave one whole value;
// of different keys, all of them; concurrent read-modify-writes lose nothing.
func TestMemoryConcurrent(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			s := New(dir) // as separate codebridges would
			v := json.RawMessage(`{"writer":` + strconv.Itoa(i) + `,"pad":"` + strings.Repeat("p", 10000) + `"}`)
			if err := s.Save("shared", v, nil); err != nil {
				t.Error(err)
			}
			if err := s.Save("own"+strconv.Itoa(i), v, nil); err != nil {
				t.Error(err)
			}
			if err := increment(s, "counter", 10); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	s := New(dir)
	m, ok, err := s.Load("shared")
	if err != nil || !ok || !json.Valid(m.Value) {
		t.Fatalf("shared = %v %v %s", ok, err, m.Value)
	}
	if m, _, _ := s.Load("counter"); string(m.Value) != "100" {
		t.Errorf("counter = %s after 10 writers added 10 each, want 100", m.Value)
	}
	if list, _ := s.List(); len(list) != 12 {
		t.Errorf("%d memories, want 12", len(list))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "memory", ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestMemoryTwoProcesses: two processes on one state directory, each adding
// to one counter by read-modify-write, lose no update.
func TestMemoryTwoProcesses(t *testing.T) {
	if dir := os.Getenv("MEMORY_TEST_CHILD_DIR"); dir != "" {
		if err := increment(New(dir), "counter", 50); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryTwoProcesses$")
		cmd.Env = append(os.Environ(), "MEMORY_TEST_CHILD_DIR="+dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	}
	if m, _, _ := New(dir).Load("counter"); string(m.Value) != "100" {
		t.Errorf("counter = %s after two processes added 50 each, want 100", m.Value)
	}
}

// TestMemoryOldFiles: files written before revisions and creation times
// still load, list and update.
func TestMemoryOldFiles(t *testing.T) {
	s := New(t.TempDir())
	os.MkdirAll(filepath.Join(s.Dir(), "memory"), 0o700)
	old := `{"key":"old","value":[1],"bytes":3,"updated":"2026-11-01T10:00:00Z"}`
	if err := os.WriteFile(s.keyFile("old"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	m, ok, err := s.Load("old")
	if err != nil || !ok || m.Rev != 1 || m.Created.IsZero() || string(m.Value) != "[1]" {
		t.Fatalf("Load = %+v %v %v", m, ok, err)
	}
	if err := s.SaveIf("old", json.RawMessage(`[1,2]`), nil, m.Rev); err != nil {
		t.Errorf("SaveIf on an old file: %v", err)
	}
	if m2, _, _ := s.Load("old"); m2.Rev != 2 || !m2.Created.Equal(m.Created) {
		t.Errorf("after update: %+v", m2)
	}
	// A damaged file is reported, and replaced by the next save.
	os.WriteFile(s.keyFile("broken"), []byte("{"), 0o600)
	if _, _, err := s.Load("broken"); err == nil || !strings.Contains(err.Error(), "codebridge memory delete") || errors.Unwrap(err) == nil {
		t.Errorf("Load of a damaged file = %v", err)
	}
	if err := s.Save("broken", json.RawMessage(`1`), nil); err != nil {
		t.Errorf("Save over a damaged file: %v", err)
	}
}

func TestTools(t *testing.T) {
	dir := t.TempDir()
	s := New(dir)
	if err := s.SaveTool(Tool{Name: "double", Source: "def double(x):\n    return 2 * x\n", Description: "Twice x.", Signature: "double(x)"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tools", "broken.json"), []byte("{"), 0o600)
	tools, err := New(dir).Tools()
	if err != nil || len(tools) != 1 || tools[0].Name != "double" || tools[0].Description != "Twice x." || tools[0].Signature != "double(x)" || tools[0].Updated.IsZero() {
		t.Fatalf("Tools = %+v %v", tools, err)
	}
	for _, name := range []string{"", "1x", "a-b", "../x", "ключ", "class", "None", strings.Repeat("a", MaxToolName+1)} {
		if err := s.SaveTool(Tool{Name: name, Source: "x = 1"}); code(err) != "bad_arguments" {
			t.Errorf("SaveTool(%q) = %v", name, err)
		}
	}
	if err := s.SaveTool(Tool{Name: "blank", Source: " \n"}); code(err) != "bad_arguments" {
		t.Errorf("blank source: %v", err)
	}
	if err := s.SaveTool(Tool{Name: "huge", Source: strings.Repeat("#", MaxSource+1)}); code(err) != "too_large" || !strings.Contains(err.Error(), "256 KiB") {
		t.Errorf("huge source: %v", err)
	}
	if existed, err := s.DeleteTool("double"); !existed || err != nil {
		t.Errorf("DeleteTool = %v %v", existed, err)
	}
	if existed, err := s.DeleteTool("double"); existed || err != nil {
		t.Errorf("second DeleteTool = %v %v", existed, err)
	}
	if tools, _ := s.Tools(); len(tools) != 0 {
		t.Errorf("after delete: %+v", tools)
	}
}

func TestToolSourcesTotal(t *testing.T) {
	s := NewWithLimits(t.TempDir(), Limits{Source: 100, Sources: 250})
	src := func(name string) string { // 100 bytes, a def and a comment
		head := "def " + name + "():\n    pass\n#"
		return head + strings.Repeat("x", 100-len(head))
	}
	for _, name := range []string{"a", "b"} {
		if err := s.SaveTool(Tool{Name: name, Source: src(name)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveTool(Tool{Name: "a", Source: src("a")}); err != nil {
		t.Errorf("replacing a helper at the total: %v", err)
	}
	if err := s.SaveTool(Tool{Name: "c", Source: src("c")}); code(err) != "too_large" || !strings.Contains(err.Error(), "over the 250 bytes total") {
		t.Errorf("past the total: %v", err)
	}
}
