package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// workspace is the data the tasks work on: a folder the filesystem server
// serves and the memory server's file. Each way gets its own, made the same.
type workspace struct {
	root  string
	files string // served by the filesystem server
}

var (
	regions   = []string{"north", "south", "east", "west"}
	customers = []string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka", "tyrell", "cyberdyne"}
	statuses  = []string{"paid", "paid", "paid", "paid", "shipped", "shipped", "failed", "refunded"}
	exts      = []string{".go", ".py", ".md", ".json", ".ts", ".txt"}
)

const (
	orderRows = 600
	noteCount = 24
)

// newWorkspace makes the data under root, from a fixed seed so every run
// and both ways see the same bytes.
func newWorkspace(root string) (*workspace, error) {
	w := &workspace{root: root, files: filepath.Join(root, "files")}
	r := rand.New(rand.NewPCG(24, 2026))
	put := func(rel, content string) error {
		p := filepath.Join(w.files, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(content), 0o644)
	}
	var orders strings.Builder
	orders.WriteString("id,date,customer,region,amount,status\n")
	for i := range orderRows {
		fmt.Fprintf(&orders, "%d,2026-%02d-%02d,%s,%s,%d.%02d,%s\n", 1000+i, 1+i%12, 1+i%28,
			customers[r.IntN(len(customers))], regions[r.IntN(len(regions))], 10+r.IntN(990), r.IntN(100),
			statuses[r.IntN(len(statuses))])
	}
	if err := put("orders.csv", orders.String()); err != nil {
		return nil, err
	}
	for i := 1; i <= noteCount; i++ {
		var n strings.Builder
		fmt.Fprintf(&n, "Meeting note %d\n", i)
		for j := range 12 {
			fmt.Fprintf(&n, "- item %d: follow up with %s about the %s region figures\n", j, customers[r.IntN(len(customers))], regions[r.IntN(len(regions))])
		}
		if i%5 == 0 {
			n.WriteString("URGENT: reply before Friday\n")
		}
		if err := put(fmt.Sprintf("notes/note-%02d.txt", i), n.String()); err != nil {
			return nil, err
		}
	}
	for p := range 6 {
		for f := range 45 {
			ext := exts[r.IntN(len(exts))]
			if err := put(fmt.Sprintf("repo/pkg%d/sub%d/file%02d%s", p, f%3, f, ext), strings.Repeat("x", r.IntN(400))); err != nil {
				return nil, err
			}
		}
	}
	if err := put("reports/q3-summary.txt", "Q3 summary\nrevenue: 1.2M\nchurn: 3.1%\n"); err != nil {
		return nil, err
	}
	if err := put("reports/q2-summary.txt", "Q2 summary\nrevenue: 1.1M\nchurn: 3.4%\n"); err != nil {
		return nil, err
	}
	return w, nil
}
