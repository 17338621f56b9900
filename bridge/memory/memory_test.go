package memory

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
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
	if err != nil || !ok || string(m.Value) != `{"steps":[1,2]}` || string(m.Metadata) != `{"by":"agent"}` || m.Bytes != 15 {
		t.Fatalf("Load = %+v %v %v", m, ok, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Key != "plan" || list[0].Value != nil {
		t.Errorf("List = %+v %v", list, err)
	}
	if existed, err := s.Delete("plan"); !existed || err != nil {
		t.Errorf("Delete = %v %v", existed, err)
	}
	if _, ok, _ := s.Load("plan"); ok {
		t.Error("deleted memory still loads")
	}
	if existed, _ := s.Delete("plan"); existed {
		t.Error("second Delete says it existed")
	}
}

func TestMemoryKeys(t *testing.T) {
	s := New(t.TempDir())
	for _, key := range []string{"../../etc/passwd", "a/b", "ключ", ".", strings.Repeat("k", MaxKey)} {
		if err := s.Save(key, json.RawMessage(`1`), nil); err != nil {
			t.Errorf("Save(%q): %v", key, err)
			continue
		}
		if m, ok, err := s.Load(key); !ok || err != nil || m.Key != key {
			t.Errorf("Load(%q) = %+v %v %v", key, m, ok, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(s.Dir(), "memory"))
	if len(entries) != 5 {
		t.Errorf("%d files for 5 keys; a key named a path outside the folder?", len(entries))
	}
	for _, key := range []string{"", strings.Repeat("k", MaxKey+1), "tab\there", "nl\n"} {
		if err := s.Save(key, json.RawMessage(`1`), nil); code(err) != "bad_arguments" {
			t.Errorf("Save(%q) = %v, want bad_arguments", key, err)
		}
	}
	if err := s.Save("k", json.RawMessage(`{not json`), nil); code(err) != "bad_arguments" {
		t.Errorf("invalid JSON: %v", err)
	}
}

func TestMemoryLimits(t *testing.T) {
	s := New(t.TempDir())
	big := json.RawMessage(`"` + strings.Repeat("x", MaxValue) + `"`)
	if err := s.Save("big", big, nil); code(err) != "too_large" || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("over one value's limit: %v", err)
	}
	almost := json.RawMessage(`"` + strings.Repeat("x", MaxValue-2) + `"`)
	for i := range MaxTotal/MaxValue - 1 { // each file is its value plus a small envelope
		if err := s.Save("k"+strconv.Itoa(i), almost, nil); err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	if err := s.Save("past-the-total", almost, nil); code(err) != "too_large" || !strings.Contains(err.Error(), "64 MiB total") {
		t.Errorf("over the total: %v", err)
	}
	// Replacing a key does not count its old value twice.
	if err := s.Save("k0", almost, nil); err != nil {
		t.Errorf("replacing at the total: %v", err)
	}
}

// TestMemoryConcurrent: concurrent writers of one key leave one whole value;
// of different keys, all of them.
func TestMemoryConcurrent(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			s := New(dir) // as separate processes would
			v := json.RawMessage(`{"writer":` + strconv.Itoa(i) + `,"pad":"` + strings.Repeat("p", 10000) + `"}`)
			if err := s.Save("shared", v, nil); err != nil {
				t.Error(err)
			}
			if err := s.Save("own"+strconv.Itoa(i), v, nil); err != nil {
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
	if list, _ := s.List(); len(list) != 21 {
		t.Errorf("%d memories, want 21", len(list))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "memory", ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestTools(t *testing.T) {
	dir := t.TempDir()
	s := New(dir)
	if err := s.SaveTool(Tool{Name: "double", Source: "def double(x):\n    return 2 * x\n", Description: "Twice x."}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tools", "broken.json"), []byte("{"), 0o600)
	tools, err := New(dir).Tools()
	if err != nil || len(tools) != 1 || tools[0].Name != "double" || tools[0].Description != "Twice x." {
		t.Fatalf("Tools = %+v %v", tools, err)
	}
	for _, name := range []string{"", "1x", "a-b", "../x", strings.Repeat("a", MaxToolName+1)} {
		if err := s.SaveTool(Tool{Name: name, Source: "x = 1"}); code(err) != "bad_arguments" {
			t.Errorf("SaveTool(%q) = %v", name, err)
		}
	}
	if err := s.SaveTool(Tool{Name: "huge", Source: strings.Repeat("#", MaxSource+1)}); code(err) != "too_large" {
		t.Errorf("huge source: %v", err)
	}
	if existed, err := s.DeleteTool("double"); !existed || err != nil {
		t.Errorf("DeleteTool = %v %v", existed, err)
	}
	if tools, _ := s.Tools(); len(tools) != 0 {
		t.Errorf("after delete: %+v", tools)
	}
}
