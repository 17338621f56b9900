// Command tokenbench measures what one code tool saves an agent: for a fixed
// set of tasks over real MCP servers it counts the tokens an agent's context
// carries and the model turns it needs, calling the tools directly and
// through codebridge's run_python, and checks every task's result. It is
// run by scripts/bench.sh tokens, which installs the pinned npm servers and
// builds codebridge first; docs/benchmark.md explains the method.
//
// It lives under scripts/, not in codebridge's command table, because it is
// a development tool: it needs the npm trees of scripts/npm and a built
// binary, and users have no use for it in the binary they install.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.npm, "npm", os.Getenv("CODEBRIDGE_TEST_NPM_DIR"), "folder of the installed npm trees of scripts/npm (servers, clients, bench)")
	flag.StringVar(&cfg.binary, "codebridge", "", "the codebridge binary to measure")
	flag.StringVar(&cfg.docs, "docs", "", "write benchmark.md, benchmark.jsonl and benchmark.svg into this folder")
	flag.StringVar(&cfg.command, "command", "scripts/bench.sh tokens", "the command named in the docs")
	model := flag.String("model", cmp.Or(os.Getenv("ANTHROPIC_MODEL"), "claude-sonnet-4-5"), "the model of the replay (with ANTHROPIC_API_KEY set)")
	run := flag.String("run", "", "do only the tasks whose name matches this regular expression")
	onlyLanes := flag.Bool("lanes", false, "measure only each lane's tools/list, with the servers whose npm trees are installed")
	flag.Parse()
	if cfg.npm == "" || cfg.binary == "" {
		fmt.Fprintln(os.Stderr, "tokenbench: want -npm DIR and -codebridge BIN; run it with scripts/bench.sh tokens")
		os.Exit(2)
	}
	if *run != "" {
		re, err := regexp.Compile(*run)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tokenbench: -run:", err)
			os.Exit(2)
		}
		tasks = slices.DeleteFunc(tasks, func(t task) bool { return !re.MatchString(t.name) })
	}
	bench := runBench
	if key := os.Getenv("ANTHROPIC_API_KEY"); *onlyLanes {
		bench = runLanes
	} else if key != "" {
		url := anthropicURL
		if base := os.Getenv("ANTHROPIC_BASE_URL"); base != "" {
			url = strings.TrimSuffix(base, "/") + "/v1/messages"
		}
		cfg.replay = &replayer{url: url, key: key, model: *model, client: http.DefaultClient}
	} else {
		fmt.Fprintln(os.Stderr, "tokenbench: ANTHROPIC_API_KEY is not set, so no replay with a real model")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := bench(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokenbench:", err)
		os.Exit(1)
	}
}
