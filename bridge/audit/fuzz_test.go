package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzShorten bounds error messages kept in a record: the result is the
// first line's first bytes, at most maxError of them plus the ellipsis, cut
// on a character boundary (valid UTF-8 in, valid UTF-8 out).
func FuzzShorten(f *testing.F) {
	f.Add("plain")
	f.Add(strings.Repeat("é", 200))
	f.Add(strings.Repeat("a", 299) + "€€")
	f.Add(strings.Repeat("\x80", 400))
	f.Add("first\nsecond")
	f.Add(strings.Repeat("🙂", 100) + "\n" + strings.Repeat("x", 1000))
	f.Fuzz(func(t *testing.T, msg string) {
		got := shorten(msg)
		if len(got) > maxError+len("…") {
			t.Fatalf("shorten(%d bytes) = %d bytes, over %d", len(msg), len(got), maxError+len("…"))
		}
		first, _, _ := strings.Cut(msg, "\n")
		if kept, cut := strings.CutSuffix(got, "…"); got != first && (!cut || !strings.HasPrefix(first, kept)) {
			t.Fatalf("shorten(%q) = %q: not a prefix of its first line", msg, got)
		}
		if utf8.ValidString(msg) && !utf8.ValidString(got) {
			t.Fatalf("shorten(%q) = %q: not valid UTF-8", msg, got)
		}
	})
}

// FuzzTail reads a log of records mixed with lines that are not records
// (garbage, a record cut short by a crash, blank lines, CRLF) in a rotated
// file and the current one. Tail returns exactly the last n whole records
// keep accepts, oldest first: the records the lines decode to, one by one.
func FuzzTail(f *testing.F) {
	f.Add([]byte("garbage\n{\"time\":\"2024-01-01T00:00:00Z\",\"tool\":\"x\"}\n{\"time\":"), uint8(3), uint8(2), uint16(40), uint8(0))
	f.Add([]byte("\r\n\n  \n{}\n{\"time\":\"0001-01-01T00:00:00Z\"}\n"), uint8(5), uint8(0), uint16(0), uint8(1))
	f.Add([]byte("{\"time\":\"2024-01-01T00:00:00Z\",\"arguments\":{\"a\":[1,"), uint8(1), uint8(1), uint16(9999), uint8(2))
	f.Add([]byte("[1,2]\nnull\n\"s\"\n{\"time\":\"2024-01-01T00:00:00Z\"} extra\n"), uint8(7), uint8(3), uint16(3), uint8(0))
	f.Fuzz(func(t *testing.T, junk []byte, records, n uint8, cut uint16, split uint8) {
		var file bytes.Buffer
		for i := range int(records % 20) {
			data, _ := json.Marshal(Record{
				Time: time.Unix(1700000000+int64(i), int64(i)).UTC(), Tool: strings.Repeat("t", i),
				Arguments: json.RawMessage(`{"i":` + string(rune('0'+i%10)) + `}`),
			})
			file.Write(data)
			file.WriteString([]string{"\n", "\r\n", "\n\n"}[i%3])
			if i%4 == int(split%4) {
				file.Write(junk)
			}
		}
		content := file.Bytes()
		if c := int(cut); c < len(content) && cut%2 == 1 { // a crash cut the last line
			content = content[:len(content)-c%64]
		}
		dir := t.TempDir()
		at := len(content) * int(split) / 255
		if err := os.WriteFile(filepath.Join(dir, FileName+".1"), content[:at], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, FileName), content[at:], 0o600); err != nil {
			t.Fatal(err)
		}
		keep := func(r *Record) bool { return len(r.Tool)%3 != 1 }

		// What the lines decode to, line by line, each file on its own.
		var want []Record
		wantSkipped := 0
		for _, part := range [][]byte{content[:at], content[at:]} {
			for line := range bytes.SplitSeq(part, []byte("\n")) {
				if len(bytes.TrimSpace(line)) == 0 {
					continue
				}
				var r Record
				if json.Unmarshal(line, &r) != nil || r.Time.IsZero() {
					wantSkipped++
					continue
				}
				if keep(&r) {
					want = append(want, r)
				}
			}
		}
		if n > 0 && len(want) > int(n) {
			want = want[len(want)-int(n):]
		}

		got, skipped, err := Tail(dir, int(n), keep)
		if err != nil {
			t.Fatalf("Tail: %v", err)
		}
		if n > 0 && len(got) > int(n) {
			t.Fatalf("Tail(%d) returned %d records", n, len(got))
		}
		if skipped != wantSkipped || !reflect.DeepEqual(normal(got), normal(want)) {
			t.Fatalf("Tail(%d) of %q = %d records (%d skipped), want %d (%d skipped):\n%v\nwant\n%v",
				n, content, len(got), skipped, len(want), wantSkipped, got, want)
		}
	})
}

// normal is recs as JSON, so that records compare by what they hold.
func normal(recs []Record) []string {
	var out []string
	for _, r := range recs {
		data, _ := json.Marshal(r)
		out = append(out, string(data))
	}
	return out
}
