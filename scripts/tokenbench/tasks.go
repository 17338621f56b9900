package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// task is one job an agent does, done both ways.
type task struct {
	name    string
	kind    string   // what the issue asks for: chaining, fan-out, ...
	prompt  string   // what the user asks, the same in both ways
	servers []string // the servers its calls use
	// direct does the task by calling tools one model turn at a time, and
	// returns the answer the model would give from the results.
	direct func(ctx context.Context, d *directRun) (string, error)
	// runs is the code of each run_python call, $ROOT standing for the
	// folder the filesystem server serves.
	runs []string
	// check tells whether the answer (the direct one, or what the code
	// printed) and the workspace after the task are right; image is whether
	// the codebridge run returned an image.
	check func(w *workspace, answer string, image bool, direct bool) error
}

// call is one tool call a direct agent makes.
type call struct {
	Server string         `json:"-"`
	Name   string         `json:"name"`
	Args   map[string]any `json:"arguments"`
}

// turn is one model turn of a direct agent: the calls it makes at once and
// their results.
type turn struct {
	calls   []call
	results []string
}

// directRun records the turns of a task done directly.
type directRun struct {
	n     *native
	w     *workspace
	turns []turn
	wall  time.Duration // time spent in the calls
}

// turn makes calls in one model turn (a model may ask for several at once)
// and returns their results' text. A tool error is a result too; wantError
// says whether one is expected.
func (d *directRun) turn(ctx context.Context, wantError bool, calls ...call) ([]string, error) {
	t := turn{calls: calls}
	for _, c := range calls {
		began := time.Now()
		text, isErr, err := d.n.call(ctx, c.Server, c.Name, c.Args)
		d.wall += time.Since(began)
		if err != nil {
			return nil, err
		}
		if isErr != wantError {
			return nil, fmt.Errorf("%s.%s: error=%v, want %v: %s", c.Server, c.Name, isErr, wantError, text)
		}
		t.results = append(t.results, text)
	}
	d.turns = append(d.turns, t)
	return t.results, nil
}

// one makes a single call in a turn of its own and returns its result.
func (d *directRun) one(ctx context.Context, c call) (string, error) {
	r, err := d.turn(ctx, false, c)
	if err != nil {
		return "", err
	}
	return r[0], nil
}

func (d *directRun) path(rel string) string { return filepath.Join(d.w.files, rel) }

// fileCall is a filesystem call on a path under the workspace.
func (d *directRun) fileCall(tool, rel string, more ...any) call {
	args := map[string]any{"path": d.path(rel)}
	for i := 0; i+1 < len(more); i += 2 {
		args[more[i].(string)] = more[i+1]
	}
	return call{Server: "filesystem", Name: tool, Args: args}
}

// order is one row of orders.csv.
type order struct {
	id, date, customer, region, status string
	amount                             float64
}

func parseOrders(csv string) []order {
	var rows []order
	for i, line := range strings.Split(strings.TrimSpace(csv), "\n") {
		f := strings.Split(line, ",")
		if i == 0 || len(f) != 6 {
			continue
		}
		amount, _ := strconv.ParseFloat(f[4], 64)
		rows = append(rows, order{f[0], f[1], f[2], f[3], f[5], amount})
	}
	return rows
}

func readOrders(w *workspace) ([]order, string, error) {
	b, err := os.ReadFile(filepath.Join(w.files, "orders.csv"))
	return parseOrders(string(b)), string(b), err
}

// failedCSV is orders.csv's header and its failed rows.
func failedCSV(csv string) string {
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	out := []string{lines[0]}
	for _, l := range lines[1:] {
		if strings.HasSuffix(l, ",failed") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// topCustomers are the three customers with the most paid revenue, and
// their totals rounded to cents.
func topCustomers(rows []order) ([]string, map[string]float64) {
	total := map[string]float64{}
	for _, r := range rows {
		if r.status == "paid" {
			total[r.customer] += r.amount
		}
	}
	names := slices.SortedFunc(maps.Keys(total), func(a, b string) int { return cmp.Compare(total[b], total[a]) })
	return names[:3], total
}

// paidByRegion is the paid revenue per region, rounded to whole units.
func paidByRegion(rows []order) map[string]int {
	sum := map[string]float64{}
	for _, r := range rows {
		if r.status == "paid" {
			sum[r.region] += r.amount
		}
	}
	out := map[string]int{}
	for k, v := range sum {
		out[k] = int(v + 0.5)
	}
	return out
}

func wantAll(answer string, parts ...string) error {
	for _, p := range parts {
		if !strings.Contains(answer, p) {
			return fmt.Errorf("the answer lacks %q:\n%s", p, answer)
		}
	}
	return nil
}

// fileContent is the text of a filesystem read result: its JSON text
// {"content": ...} when structured, else the text itself.
func fileContent(result string) string {
	var r struct{ Content string }
	if json.Unmarshal([]byte(result), &r) == nil && r.Content != "" {
		return r.Content
	}
	return result
}

var tasks = []task{
	{
		name: "filter-write", kind: "chaining", servers: []string{"filesystem"},
		prompt: "Read orders.csv, keep the failed orders and write them, with the header, to failed.csv.",
		direct: func(ctx context.Context, d *directRun) (string, error) {
			r, err := d.one(ctx, d.fileCall("read_text_file", "orders.csv"))
			if err != nil {
				return "", err
			}
			out := failedCSV(fileContent(r))
			if _, err := d.turn(ctx, false, d.fileCall("write_file", "failed.csv", "content", out)); err != nil {
				return "", err
			}
			return fmt.Sprintf("wrote %d failed orders to failed.csv", strings.Count(out, "\n")-1), nil
		},
		runs: []string{`rows = (await mcp_filesystem.read_text_file(path="$ROOT/orders.csv"))["content"].splitlines()
failed = [r for r in rows[1:] if r.endswith(",failed")]
await mcp_filesystem.write_file(path="$ROOT/failed.csv", content="\n".join([rows[0]] + failed) + "\n")
print(f"wrote {len(failed)} failed orders to failed.csv")`},
		check: func(w *workspace, answer string, _, _ bool) error {
			_, csv, err := readOrders(w)
			if err != nil {
				return err
			}
			want := failedCSV(csv)
			got, err := os.ReadFile(filepath.Join(w.files, "failed.csv"))
			if err != nil || string(got) != want {
				return fmt.Errorf("failed.csv is not the failed orders (%v)", err)
			}
			return wantAll(answer, fmt.Sprintf("wrote %d failed", strings.Count(want, "\n")-1))
		},
	},
	{
		name: "urgent-notes", kind: "fan-out", servers: []string{"filesystem"},
		prompt: "Which of the meeting notes in notes/ say URGENT? Read them all.",
		direct: func(ctx context.Context, d *directRun) (string, error) {
			r, err := d.one(ctx, d.fileCall("list_directory", "notes"))
			if err != nil {
				return "", err
			}
			var names []string
			var reads []call
			for l := range strings.Lines(fileContent(r)) {
				if name, ok := strings.CutPrefix(strings.TrimSpace(l), "[FILE] "); ok {
					names = append(names, name)
					reads = append(reads, d.fileCall("read_text_file", "notes/"+name))
				}
			}
			texts, err := d.turn(ctx, false, reads...)
			if err != nil {
				return "", err
			}
			var urgent []string
			for i, t := range texts {
				if strings.Contains(t, "URGENT") {
					urgent = append(urgent, "'"+names[i]+"'")
				}
			}
			return "[" + strings.Join(urgent, ", ") + "]", nil
		},
		runs: []string{`import asyncio
listing = (await mcp_filesystem.list_directory(path="$ROOT/notes"))["content"]
names = [l[7:] for l in listing.splitlines() if l.startswith("[FILE] ")]
texts = await asyncio.gather(*(mcp_filesystem.read_text_file(path=f"$ROOT/notes/{n}") for n in names))
print(sorted(n for n, t in zip(names, texts) if "URGENT" in t["content"]))`},
		check: func(_ *workspace, answer string, _, _ bool) error {
			var want []string
			for i := 5; i <= noteCount; i += 5 {
				want = append(want, fmt.Sprintf("'note-%02d.txt'", i))
			}
			return wantAll(answer, "["+strings.Join(want, ", ")+"]")
		},
	},
	{
		name: "count-extensions", kind: "aggregation", servers: []string{"filesystem"},
		prompt: "How many files of each extension are there under repo/?",
		direct: func(ctx context.Context, d *directRun) (string, error) {
			r, err := d.one(ctx, d.fileCall("directory_tree", "repo"))
			if err != nil {
				return "", err
			}
			var tree []node
			if err := json.Unmarshal([]byte(fileContent(r)), &tree); err != nil {
				return "", fmt.Errorf("directory_tree result: %w", err)
			}
			return extensionsAnswer(countExt(tree, map[string]int{})), nil
		},
		runs: []string{`import collections, json, os
tree = json.loads((await mcp_filesystem.directory_tree(path="$ROOT/repo"))["content"])
counts = collections.Counter()
def walk(nodes):
    for n in nodes:
        if n["type"] == "file": counts[os.path.splitext(n["name"])[1]] += 1
        else: walk(n.get("children", []))
walk(tree)
print(sorted(counts.items()))`},
		check: func(w *workspace, answer string, _, _ bool) error {
			counts := map[string]int{}
			err := filepath.WalkDir(filepath.Join(w.files, "repo"), func(p string, e os.DirEntry, err error) error {
				if err == nil && !e.IsDir() {
					counts[filepath.Ext(p)]++
				}
				return err
			})
			if err != nil {
				return err
			}
			return wantAll(answer, extensionsAnswer(counts))
		},
	},
	{
		name: "find-and-call", kind: "search-then-call", servers: []string{"everything"},
		prompt: "Use whichever configured tool adds two numbers to add 1234 and 5678.",
		direct: func(ctx context.Context, d *directRun) (string, error) {
			return d.one(ctx, call{Server: "everything", Name: "get-sum", Args: map[string]any{"a": 1234, "b": 5678}})
		},
		// The first search finds it among the hits; the model picks it.
		runs: []string{`for h in await search_tool_docs("add two numbers", limit=5):
    print(h["server"], h["toolAlias"], "-", h["description"])`,
			`print(await mcp_everything.get_sum(a=1234, b=5678))`},
		check: func(_ *workspace, answer string, _, _ bool) error { return wantAll(answer, "6912") },
	},
	{
		name: "top-customers", kind: "session state, 2 runs", servers: []string{"filesystem", "memory"},
		prompt: "Find the three customers with the most paid revenue in orders.csv, then record them in the memory graph as entities of type customer, with their total as an observation.",
		direct: func(ctx context.Context, d *directRun) (string, error) {
			r, err := d.one(ctx, d.fileCall("read_text_file", "orders.csv"))
			if err != nil {
				return "", err
			}
			top, total := topCustomers(parseOrders(fileContent(r)))
			var entities []any
			for _, c := range top {
				entities = append(entities, map[string]any{"name": c, "entityType": "customer",
					"observations": []string{fmt.Sprintf("paid revenue %.2f", total[c])}})
			}
			if _, err := d.turn(ctx, false, call{Server: "memory", Name: "create_entities", Args: map[string]any{"entities": entities}}); err != nil {
				return "", err
			}
			return "recorded " + strings.Join(top, ", "), nil
		},
		runs: []string{`import csv, io, collections
text = (await mcp_filesystem.read_text_file(path="$ROOT/orders.csv"))["content"]
orders = list(csv.DictReader(io.StringIO(text)))
paid = collections.Counter()
for o in orders:
    if o["status"] == "paid": paid[o["customer"]] += float(o["amount"])
top = paid.most_common(3)
print(len(orders), "orders;", top)`,
			`await mcp_memory.create_entities(entities=[
    {"name": c, "entityType": "customer", "observations": [f"paid revenue {t:.2f}"]} for c, t in top])
print("recorded", ", ".join(c for c, _ in top))`},
		check: func(w *workspace, answer string, _, _ bool) error {
			rows, _, err := readOrders(w)
			if err != nil {
				return err
			}
			top, total := topCustomers(rows)
			mem, err := os.ReadFile(filepath.Join(w.root, "memory.jsonl"))
			if err != nil {
				return fmt.Errorf("the memory graph: %w", err)
			}
			for _, c := range top {
				if !strings.Contains(string(mem), fmt.Sprintf(`"name":"%s"`, c)) || !strings.Contains(string(mem), fmt.Sprintf("paid revenue %.2f", total[c])) {
					return fmt.Errorf("the memory graph lacks %s with its total:\n%s", c, mem)
				}
			}
			return wantAll(answer, "recorded "+strings.Join(top, ", "))
		},
	},
	{
		name: "revenue-chart", kind: "data (pandas + chart)", servers: []string{"filesystem"},
		prompt: "Make a bar chart of the paid revenue per region in orders.csv and give me the totals.",
		direct: func(ctx context.Context, d *directRun) (string, error) {
			r, err := d.one(ctx, d.fileCall("read_text_file", "orders.csv"))
			if err != nil {
				return "", err
			}
			// The model adds the figures up itself and cannot draw the chart.
			return regionsAnswer(paidByRegion(parseOrders(fileContent(r)))), nil
		},
		runs: []string{`import io, pandas as pd, matplotlib.pyplot as plt
df = pd.read_csv(io.StringIO((await mcp_filesystem.read_text_file(path="$ROOT/orders.csv"))["content"]))
paid = df[df.status == "paid"].groupby("region")["amount"].sum().round().astype(int)
paid.plot.bar(title="Paid revenue per region", figsize=(5, 3)); plt.tight_layout(); plt.show()
print(paid.to_dict())`},
		check: func(w *workspace, answer string, image, direct bool) error {
			rows, _, err := readOrders(w)
			if err != nil {
				return err
			}
			if !direct && !image {
				return fmt.Errorf("no chart came back; the run printed:\n%s", answer)
			}
			return wantAll(answer, regionsAnswer(paidByRegion(rows)))
		},
	},
	{
		name: "allowed-dirs", kind: "one small call: direct should win", servers: []string{"filesystem"},
		prompt: "Which folders may the filesystem server read?",
		direct: func(ctx context.Context, d *directRun) (string, error) {
			return d.one(ctx, call{Server: "filesystem", Name: "list_allowed_directories", Args: map[string]any{}})
		},
		// The model does not know the server's tools: it looks them up first.
		runs: []string{`print(await query_tool_docs("filesystem"))`,
			`print(await mcp_filesystem.list_allowed_directories())`},
		check: func(w *workspace, answer string, _, _ bool) error { return wantAll(answer, w.files) },
	},
	{
		name: "missing-file", kind: "error recovery", servers: []string{"filesystem"},
		prompt: "Show me reports/report-q3.txt.",
		direct: func(ctx context.Context, d *directRun) (string, error) {
			if _, err := d.turn(ctx, true, d.fileCall("read_text_file", "reports/report-q3.txt")); err != nil {
				return "", err
			}
			r, err := d.one(ctx, d.fileCall("list_directory", "reports"))
			if err != nil {
				return "", err
			}
			if !strings.Contains(r, "q3-summary.txt") {
				return "", fmt.Errorf("reports/ lacks q3-summary.txt: %s", r)
			}
			r, err = d.one(ctx, d.fileCall("read_text_file", "reports/q3-summary.txt"))
			if err != nil {
				return "", err
			}
			return fileContent(r), nil
		},
		runs: []string{`print((await mcp_filesystem.read_text_file(path="$ROOT/reports/report-q3.txt"))["content"])`,
			`listing = (await mcp_filesystem.list_directory(path="$ROOT/reports"))["content"]
name = next(l[7:] for l in listing.splitlines() if "q3" in l)
print(name); print((await mcp_filesystem.read_text_file(path=f"$ROOT/reports/{name}"))["content"])`},
		check: func(_ *workspace, answer string, _, _ bool) error {
			return wantAll(answer, "Q3 summary", "revenue: 1.2M")
		},
	},
}

// node is an entry of the filesystem server's directory_tree.
type node struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Children []node `json:"children"`
}

func countExt(tree []node, counts map[string]int) map[string]int {
	for _, n := range tree {
		if n.Type == "file" {
			counts[filepath.Ext(n.Name)]++
		} else {
			countExt(n.Children, counts)
		}
	}
	return counts
}

// extensionsAnswer prints counts as Python prints sorted(Counter.items()).
func extensionsAnswer(counts map[string]int) string {
	var parts []string
	for _, ext := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("('%s', %d)", ext, counts[ext]))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// regionsAnswer prints sums as Python prints the dict of a sorted Series.
func regionsAnswer(sums map[string]int) string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(sums)) {
		parts = append(parts, fmt.Sprintf("'%s': %d", r, sums[r]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
