// Command housecount prints the figures docs/architecture.md tracks about
// the shape of the code: Go packages, exported names, the types named
// Engine, Container or Box, and the production context.WithTimeout calls
// whose budget is a literal number of seconds. Run from the module root:
//
//	go run ./scripts/housecount
//
// Production code is every non-test Go file outside scripts/ and outside
// the test-helper packages (runtime/testenv, runtime/enginetest,
// runtime/kube/kubetest, bridge/internal/bridgetest).
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// testHelpers are the packages that exist only for tests.
var testHelpers = []string{"runtime/testenv", "runtime/enginetest", "runtime/kube/kubetest", "bridge/internal/bridgetest"}

// watched are the type names one word should mean one thing for.
var watched = []string{"Engine", "Container", "Box"}

type counts struct {
	packages  map[string]bool // every package folder, helpers and scripts included
	exported  int
	types     map[string][]string // watched name → where declared
	suffixed  map[string][]string // watched name → other types whose name ends in it
	timeouts  []string
	prodFiles int
}

func main() {
	c := counts{packages: map[string]bool{}, types: map[string][]string{}, suffixed: map[string][]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		c.packages[dir] = true
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(dir, "scripts") || slices.Contains(testHelpers, dir) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		c.prodFiles++
		c.add(fset, dir, f)
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "housecount:", err)
		os.Exit(1)
	}
	fmt.Printf("Go packages (all, test helpers and scripts included): %d\n", len(c.packages))
	fmt.Printf("production files: %d\n", c.prodFiles)
	fmt.Printf("exported names (package-level and methods, production code): %d\n", c.exported)
	for _, name := range watched {
		fmt.Printf("types named %s: %d %v\n", name, len(c.types[name]), c.types[name])
		fmt.Printf("  other types ending in %s: %d %v\n", name, len(c.suffixed[name]), c.suffixed[name])
	}
	fmt.Printf("context.WithTimeout(…, N*time.Second) in production code: %d\n", len(c.timeouts))
	for _, at := range c.timeouts {
		fmt.Println("  ", at)
	}
}

func (c *counts) add(fset *token.FileSet, dir string, f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() {
				c.exported++
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						c.exported++
					}
					// A type is named Engine when its name is the word,
					// exported or not (bridge had an unexported engine).
					for _, w := range watched {
						switch {
						case strings.EqualFold(s.Name.Name, w):
							c.types[w] = append(c.types[w], dir)
						case strings.HasSuffix(s.Name.Name, w):
							c.suffixed[w] = append(c.suffixed[w], dir+"."+s.Name.Name)
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							c.exported++
						}
					}
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 || !isSel(call.Fun, "context", "WithTimeout") {
			return true
		}
		if secondsLiteral(call.Args[1]) {
			c.timeouts = append(c.timeouts, fset.Position(call.Pos()).String())
		}
		return true
	})
}

// isSel reports whether e is pkg.name.
func isSel(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// secondsLiteral reports whether e holds a literal number times
// time.Second, alone or in a sum.
func secondsLiteral(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok || b.Op != token.MUL {
			return true
		}
		_, lit := b.X.(*ast.BasicLit)
		if lit && isSel(b.Y, "time", "Second") {
			found = true
		}
		return true
	})
	return found
}
