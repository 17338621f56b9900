package server

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestDescriptionNamesExist: every function the description tells a model to
// call is defined by the sandbox's helper module.
func TestDescriptionNamesExist(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "runtime", "python", "pyfiles", "mcp", "*.py"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the sandbox's helper module: %v %v", files, err)
	}
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	called := regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\(`).FindAllStringSubmatch(toolDescription, -1)
	if len(called) < 5 {
		t.Fatalf("found %d calls in the description, want the helpers it names: %q", len(called), toolDescription)
	}
	for _, m := range called {
		name := m[1]
		if name == "Python" { // "(no network; ...)" follows the word
			continue
		}
		if !regexp.MustCompile(`(?m)^(async )?def ` + name + `\(`).MatchString(src.String()) {
			t.Errorf("the description names %s(), which the sandbox's helper module does not define", name)
		}
	}
}

// TestListedToolTokens counts the listed tool's tokens with the tokenizers
// of current models (gpt-tokenizer from the pinned npm tree, offline): every
// client pays them on every turn, so they have a budget.
func TestListedToolTokens(t *testing.T) {
	const budget = 200
	clients := testenv.NPMClients(t)
	testenv.NPMModule(t, "gpt-tokenizer")
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "install Node.js 20+")
	}
	for _, sessions := range []bool{true, false} {
		cfg := bridgetest.Config(t)
		cfg.Sessions = sessions
		tool, err := json.Marshal(newTool(testOptions(cfg, Options{}).Limits))
		if err != nil {
			t.Fatal(err)
		}
		script := `const r = require("module").createRequire(process.argv[1] + "/package.json");
const s = require("fs").readFileSync(0, "utf8");
for (const e of ["cl100k_base", "o200k_base"]) console.log(e, r("gpt-tokenizer/encoding/" + e).encode(s).length);`
		cmd := exec.Command(node, "-e", script, clients)
		cmd.Stdin = strings.NewReader(string(tool))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("counting tokens: %v\n%s", err, out)
		}
		for line := range strings.Lines(string(out)) {
			enc, count, _ := strings.Cut(strings.TrimSpace(line), " ")
			n, err := strconv.Atoi(count)
			if err != nil {
				t.Fatalf("tokenizer output %q", out)
			}
			t.Logf("sessions=%v: %d bytes, %d %s tokens", sessions, len(tool), n, enc)
			if n >= budget {
				t.Errorf("sessions=%v: the listed tool is %d %s tokens, the budget is under %d:\n%s", sessions, n, enc, budget, tool)
			}
		}
	}
}
