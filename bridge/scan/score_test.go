package scan

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The goals of issue 42 for the scanner: recall on the labelled corpus at
// least minRecall, and at most maxFPR of LiveMCPTool's real tools held.
const (
	minRecall = 0.9
	maxFPR    = 0.02
)

// entry is one line of testdata/poisoning.jsonl.
type entry struct {
	ID        string `json:"id"`
	Label     string `json:"label"` // "poisoned" or "benign"
	Source    string `json:"source"`
	Technique string `json:"technique"`
	// Holdout entries were written after the rules were tuned on the
	// others and were not tuned on: their recall is reported apart.
	Holdout bool      `json:"holdout"`
	Server  string    `json:"server"` // the entry's server; "corpus" when empty
	Others  []Name    `json:"others"` // other servers' tools, for shadowing
	Tool    *mcp.Tool `json:"tool"`
}

func readCorpus(t *testing.T) []entry {
	t.Helper()
	f, err := os.Open("testdata/poisoning.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	ids := map[string]bool{}
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("testdata/poisoning.jsonl:%d: %v", n, err)
		}
		switch {
		case e.ID == "" || ids[e.ID]:
			t.Fatalf("testdata/poisoning.jsonl:%d: missing or repeated id %q", n, e.ID)
		case e.Label != "poisoned" && e.Label != "benign":
			t.Fatalf("testdata/poisoning.jsonl:%d (%s): label %q, want poisoned or benign", n, e.ID, e.Label)
		case e.Label == "poisoned" && e.Source == "":
			t.Fatalf("testdata/poisoning.jsonl:%d (%s): a poisoned entry must cite its source", n, e.ID)
		case e.Tool == nil || e.Tool.Name == "":
			t.Fatalf("testdata/poisoning.jsonl:%d (%s): no tool", n, e.ID)
		}
		ids[e.ID] = true
		if e.Server == "" {
			e.Server = "corpus"
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCorpusScore scores the scanner on the labelled corpus and fails below
// the goals; -v prints the table and every miss and false alarm.
func TestCorpusScore(t *testing.T) {
	corpus := readCorpus(t)
	var tp, fp, tn, fn int
	var poisoned, benign int
	var hoPoisoned, hoHeld, hoBenign, hoPassed int
	for _, e := range corpus {
		fs := Tool(e.Server, e.Tool, e.Others...)
		held := len(fs) > 0
		switch {
		case e.Holdout && e.Label == "poisoned":
			hoPoisoned++
			if held {
				hoHeld++
			}
		case e.Holdout:
			hoBenign++
			if !held {
				hoPassed++
			}
		}
		switch {
		case e.Label == "poisoned" && held:
			tp++
		case e.Label == "poisoned":
			fn++
			t.Logf("missed %s (%s): %s", e.ID, e.Technique, Summary(partial(e)))
		case held:
			fp++
			t.Logf("false alarm %s: %s", e.ID, Summary(fs))
		default:
			tn++
		}
		if e.Label == "poisoned" {
			poisoned++
		} else {
			benign++
		}
	}
	if poisoned < 40 || benign < 40 {
		t.Errorf("the corpus has %d poisoned and %d benign entries; want at least 40 of each", poisoned, benign)
	}
	precision := ratio(tp, tp+fp)
	recall := ratio(tp, tp+fn)
	fpr := ratio(fp, fp+tn)
	t.Logf("corpus: %d poisoned, %d benign; held %d of the poisoned and %d of the benign", poisoned, benign, tp, fp)
	t.Logf("| precision | recall | false-positive rate |\n| %.3f (%d/%d) | %.3f (%d/%d) | %.3f (%d/%d) |",
		precision, tp, tp+fp, recall, tp, tp+fn, fpr, fp, fp+tn)
	t.Logf("held out (round 4, written after the last rule change and not tuned on): %d of %d poisoned held (recall %.3f), %d of %d benign passed",
		hoHeld, hoPoisoned, ratio(hoHeld, hoPoisoned), hoPassed, hoBenign)
	if recall < minRecall {
		t.Errorf("recall %.3f on the corpus, below the goal %.2f", recall, minRecall)
	}
	if fpr > maxFPR*5 { // the corpus's benign half is hard on purpose
		t.Errorf("false-positive rate %.3f on the corpus's hard benign entries, above %.2f", fpr, maxFPR*5)
	}
}

// partial is what fired in a missed entry, under the threshold.
func partial(e entry) []Finding { return everything(e.Server, e.Tool, e.Others) }

// everything is every finding in t, whatever their weight.
func everything(server string, t *mcp.Tool, others []Name) []Finding {
	s := newScanner(server, others)
	s.tool(t)
	return s.found
}

// TestThresholdSweep prints what other thresholds would give: recall on
// the corpus and on its held-out round, and the false-positive rate on the
// corpus's benign entries and on LiveMCPTool.
func TestThresholdSweep(t *testing.T) {
	corpus := readCorpus(t)
	live := readLive(t)
	var names []Name
	for _, lt := range live {
		names = append(names, Name{Server: lt.Server, Tool: lt.Tool})
	}
	liveTotals := make([]int, len(live))
	for i, lt := range live {
		liveTotals[i] = Total(everything(lt.Server, &mcp.Tool{Name: lt.Tool, Description: lt.Description, InputSchema: lt.InputSchema}, names))
	}
	t.Log("| threshold | recall, corpus | recall, held out | FPR, corpus benign | FPR, LiveMCPTool |")
	for th := 1; th <= 5; th++ {
		var tp, p, hoTP, hoP, fp, n int
		for _, e := range corpus {
			held := Total(everything(e.Server, e.Tool, e.Others)) >= th
			switch {
			case e.Label == "poisoned":
				p++
				if held {
					tp++
				}
				if e.Holdout {
					hoP++
					if held {
						hoTP++
					}
				}
			default:
				n++
				if held {
					fp++
				}
			}
		}
		liveFP := 0
		for _, total := range liveTotals {
			if total >= th {
				liveFP++
			}
		}
		t.Logf("| %d | %.3f (%d/%d) | %.3f (%d/%d) | %.3f (%d/%d) | %.3f (%d/%d) |", th,
			ratio(tp, p), tp, p, ratio(hoTP, hoP), hoTP, hoP, ratio(fp, n), fp, n, ratio(liveFP, len(live)), liveFP, len(live))
	}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// liveTool is one row of LiveMCPTool's tools.json.
type liveTool struct {
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Description string `json:"description"`
	InputSchema any    `json:"inputSchema"`
}

// TestLiveMCPToolFalsePositives scans LiveMCPTool's 527 real tools, each
// with every other server's tools as the others, as benign real-world
// text; it fails above the goal's false-positive rate, and -v lists every
// tool held with the findings that held it.
func TestLiveMCPToolFalsePositives(t *testing.T) {
	var file struct{ Tools []liveTool }
	file.Tools = readLive(t)
	var names []Name
	for _, lt := range file.Tools {
		names = append(names, Name{Server: lt.Server, Tool: lt.Tool})
	}
	held, near := 0, 0
	var lines, nearLines []string
	for _, lt := range file.Tools {
		tool := &mcp.Tool{Name: lt.Tool, Description: lt.Description, InputSchema: lt.InputSchema}
		if fs := Tool(lt.Server, tool, names...); len(fs) > 0 {
			held++
			lines = append(lines, fmt.Sprintf("%s.%s: %s", lt.Server, lt.Tool, describe(fs)))
		}
		if all := everything(lt.Server, tool, names); Total(all) == Threshold-1 {
			near++
			nearLines = append(nearLines, fmt.Sprintf("%s.%s: %s", lt.Server, lt.Tool, describe(all)))
		}
	}
	fpr := ratio(held, len(file.Tools))
	t.Logf("LiveMCPTool: %d of %d tools held, false-positive rate %.3f; %d more one point under the threshold", held, len(file.Tools), fpr, near)
	for _, l := range lines {
		t.Log("  " + l)
	}
	t.Log("one point under the threshold:")
	for _, l := range nearLines {
		t.Log("  " + l)
	}
	if fpr > maxFPR {
		t.Errorf("false-positive rate %.3f on LiveMCPTool, above the goal %.2f", fpr, maxFPR)
	}
}

// readLive reads LiveMCPTool's tools, as discovery/search's test data has them.
func readLive(t *testing.T) []liveTool {
	t.Helper()
	raw, err := os.ReadFile("../../discovery/search/testdata/livemcptool/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tools []liveTool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Tools) < 500 {
		t.Fatalf("LiveMCPTool has %d tools, want its 527", len(file.Tools))
	}
	return file.Tools
}

func describe(fs []Finding) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("%s(+%d) in %s: %s", f.Code, f.Weight, f.Field, f.Excerpt)
	}
	return strings.Join(parts, "; ")
}
