package settings

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the folder of go.mod above the test's package, so these tests
// find README.md and docs/ from whichever package holds them.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// TestDocsLinks checks that every relative link and #anchor in README.md and
// docs/*.md resolves: the file exists, and the anchor is a heading of it as
// GitHub names headings (lower case, spaces to '-', punctuation dropped).
func TestDocsLinks(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	anchors := map[string]map[string]bool{} // cleaned path -> anchors
	read := func(path string) (string, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false
		}
		if anchors[path] == nil {
			anchors[path] = headingAnchors(string(b))
		}
		return string(b), true
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, file := range files {
		file = filepath.Clean(file)
		text, ok := read(file)
		if !ok {
			t.Fatalf("cannot read %s", file)
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Clean(filepath.Join(filepath.Dir(file), path))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: no file %s", file, target, dest)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if _, ok := read(dest); !ok || !anchors[dest][anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", file, target, dest, anchor)
			}
		}
	}
}

// stripCode blanks fenced code blocks and inline code spans, where brackets
// are not links.
func stripCode(text string) string {
	return codeSpan.ReplaceAllString(stripFences(text), "``")
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// headingAnchors returns the anchors GitHub gives the headings of a Markdown
// text, including the -1, -2 suffixes of repeated ones.
func headingAnchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for line := range strings.SplitSeq(stripFences(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var a strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				a.WriteRune(r)
			}
		}
		id := a.String()
		if n := seen[id]; n > 0 {
			out[id+"-"+strconv.Itoa(n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

// stripFences blanks fenced code blocks, whose '#' lines are not headings.
func stripFences(text string) string {
	var b strings.Builder
	fenced := false
	for line := range strings.SplitAfterSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || strings.HasPrefix(strings.TrimSpace(line), "```") {
			b.WriteString("\n")
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}
