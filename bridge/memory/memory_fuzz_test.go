package memory

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzSave saves an arbitrary key, value and metadata in a new store with
// small limits. What
// Save accepts, Load returns under the same key with the same JSON (compacted,
// as stored) and a key that checkKey accepts; what it refuses leaves no file
// behind and Load finds nothing.
func FuzzSave(f *testing.F) {
	f.Add("k", []byte(`{"a": [1, 2.50, "x"]}`), []byte(`{"tag":"t"}`))
	f.Add("with space/and../slash", []byte(` "<html>&" `), []byte(`null`))
	f.Add("", []byte(`1`), []byte(nil))
	f.Add("\x00", []byte(`1`), []byte(nil))
	f.Add("\xff", []byte(`1`), []byte(nil))
	f.Add("é\u200b", []byte(`1`), []byte(nil))
	f.Add("k", []byte(`{"a":1} {"b":2}`), []byte(nil))
	f.Add("k", []byte("\"\xff\""), []byte(` null `))
	f.Add("k", []byte(`{"a":1,"a":2}`), []byte(`[`))
	f.Add("k", []byte(`1e999`), []byte(`""`))
	f.Fuzz(func(t *testing.T, key string, value, metadata []byte) {
		// Small limits, so that a refusal after taking the lock (the
		// total) is tried too.
		s := NewWithLimits(t.TempDir(), Limits{Value: 256, Total: 400})
		if err := s.Save(key, value, metadata); err != nil {
			if entries, _ := os.ReadDir(s.memDir()); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return !e.IsDir() && e.Name() != ".lock" }) {
				t.Fatalf("Save(%q) refused (%v) but left %v", key, err, entries)
			}
			if checkKey(key) == nil {
				if _, found, err := s.Load(key); found || err != nil {
					t.Fatalf("Save(%q) refused, yet Load found %v, %v", key, found, err)
				}
			}
			return
		}
		if err := checkKey(key); err != nil {
			t.Fatalf("Save accepted key %q that checkKey refuses: %v", key, err)
		}
		m, found, err := s.Load(key)
		if err != nil || !found {
			t.Fatalf("Save(%q) accepted; Load = %v, %v", key, found, err)
		}
		if m.Key != key || m.Rev != 1 || m.Bytes != len(value) {
			t.Fatalf("Load(%q) = key %q rev %d bytes %d", key, m.Key, m.Rev, m.Bytes)
		}
		if !sameJSON(m.Value, value) {
			t.Fatalf("value %q came back as %q", value, m.Value)
		}
		if !sameJSON(m.Metadata, metadata) {
			t.Fatalf("metadata %q came back as %q", metadata, m.Metadata)
		}
	})
}

// sameJSON reports whether a and b decode to the same value, empty being
// null.
func sameJSON(a, b []byte) bool {
	decode := func(raw []byte) (any, bool) {
		if len(bytes.TrimSpace(raw)) == 0 {
			return nil, true
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		return v, dec.Decode(&v) == nil && !dec.More()
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

var pyIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// FuzzCheckNames checks memory keys and helper names. A key accepted is
// valid UTF-8 of 1 to MaxKey printable characters; a helper name is accepted
// exactly when it is an ASCII Python identifier of at most MaxToolName bytes
// that is not a keyword (so also a file name that cannot leave its folder).
func FuzzCheckNames(f *testing.F) {
	for _, s := range []string{"a", "_", "x1", "1x", "None", "none", "é", "a.b", "../x", "a b", "\u0130", "K", "ſ", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkKey(s) == nil {
			n := utf8.RuneCountInString(s)
			if !utf8.ValidString(s) || n < 1 || n > MaxKey {
				t.Fatalf("checkKey(%q) accepted %d characters", s, n)
			}
			for _, r := range s {
				if !unicode.IsPrint(r) {
					t.Fatalf("checkKey(%q) accepted %U", s, r)
				}
			}
		}
		want := pyIdentifier.MatchString(s) && len(s) <= MaxToolName && !slices.Contains(keywords, s)
		if got := checkToolName(s) == nil; got != want {
			t.Fatalf("checkToolName(%q) accepted = %v, want %v", s, got, want)
		}
	})
}
