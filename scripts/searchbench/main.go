// Command searchbench measures codebridge's tool search as an agent meets
// it: the tools of a corpus (LiveMCPTool's 527 tools of 70 servers by
// default) are served as real MCP servers behind a real codebridge, and
// every query of the golden files is run through search_tool_docs inside a
// run_python sandbox. It scores the rankings with searcheval (Recall@k,
// Hit@k, MRR, nDCG@10) per golden file, times each search as the code sees
// it, and writes the table into docs/search.md and a record into
// docs/search.jsonl. It is run by scripts/bench.sh search.
//
//	searchbench -codebridge BIN [-golden FILE,...] [-docs DIR] [-copies N]
//	searchbench serve -corpus FILE -server NAME
//
// The serve form is the stand-in MCP server for one server of the corpus
// (see [corpusServer]); the benchmark configures codebridge to start itself
// that way, once per server.
//
// It lives under scripts/, not in codebridge's command table, because it is
// a development tool that needs a built binary and the sandbox image.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const defaultCorpus = "discovery/search/testdata/livemcptool/tools.json"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "serve" {
		fs := flag.NewFlagSet("searchbench serve", flag.ContinueOnError)
		corpus := fs.String("corpus", defaultCorpus, "the corpus file (LiveMCPTool's tools.json shape)")
		server := fs.String("server", "", "the corpus server whose tools to serve")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *server == "" {
			return fmt.Errorf("serve: want -server NAME, one of the corpus's servers")
		}
		return serve(ctx, *corpus, *server)
	}
	var cfg config
	fs := flag.NewFlagSet("searchbench", flag.ContinueOnError)
	fs.StringVar(&cfg.binary, "codebridge", "", "the codebridge binary to measure")
	fs.StringVar(&cfg.corpus, "corpus", defaultCorpus, "the corpus file whose tools the servers serve")
	golden := fs.String("golden", "discovery/search/testdata/golden/dev.jsonl,discovery/search/testdata/golden/test.jsonl",
		"golden files, comma-separated, each scored on its own (named by its file name); missing ones are skipped with a note")
	fs.StringVar(&cfg.docs, "docs", "", "write the results into search.md (between its markers) and append them to search.jsonl in this folder")
	fs.StringVar(&cfg.command, "command", "scripts/bench.sh search", "the command named in the docs")
	fs.StringVar(&cfg.name, "name", "search_tool_docs", "the name of this run in the table, e.g. the search's version")
	fs.StringVar(&cfg.commit, "commit", "", "the commit codebridge was built from (default: git describe of this folder)")
	fs.IntVar(&cfg.limit, "limit", 10, "the limit passed to search_tool_docs")
	fs.IntVar(&cfg.copies, "copies", 1, "serve the corpus this many times (servers NAME-2, ...) to time search over more tools; latency only, no -docs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.binary == "" || fs.NArg() > 0 {
		return fmt.Errorf("want -codebridge BIN and no arguments; run it with scripts/bench.sh search")
	}
	for _, g := range strings.Split(*golden, ",") {
		if g = strings.TrimSpace(g); g != "" {
			cfg.golden = append(cfg.golden, g)
		}
	}
	return runBench(ctx, cfg)
}
