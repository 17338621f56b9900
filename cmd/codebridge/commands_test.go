package main

import (
	"bytes"
	"strings"
	"testing"
)

// parseArgs parses args as codebridge's command line, in process.
func parseArgs(t *testing.T, args ...string) (stdout, stderr string, code int, done bool) {
	t.Helper()
	var o, e bytes.Buffer
	_, code, done = parse(args, &o, &e)
	return o.String(), e.String(), code, done
}

// TestUsageListsEveryCommand: codebridge --help, codebridge help and
// codebridge -h list every command of the table, with its summary.
func TestUsageListsEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		out, stderr, code, done := parseArgs(t, args...)
		if code != 0 || !done || stderr != "" {
			t.Fatalf("%v: exit %d, done %v, stderr %q; want 0, true and none", args, code, done, stderr)
		}
		for _, cmd := range commands() {
			first, _, _ := strings.Cut(cmd.summary, "\n")
			if !strings.Contains(out, "\n  codebridge "+cmd.name) || !strings.Contains(out, first) {
				t.Errorf("%v does not list %s (%q):\n%s", args, cmd.name, first, out)
			}
		}
	}
	// memory's help lists every verb of its table.
	for _, v := range memoryVerbs {
		if !strings.Contains(memoryHelp, "codebridge memory "+v.name) || !strings.Contains(memoryHelp, v.summary) {
			t.Errorf("memory's help does not list %s:\n%s", v.name, memoryHelp)
		}
	}
}

// TestHelpOfEveryCommand: every command of the table takes --help, -h and
// help NAME, which print its usage on stdout and exit 0.
func TestHelpOfEveryCommand(t *testing.T) {
	for _, cmd := range commands() {
		t.Run(cmd.name, func(t *testing.T) {
			if !strings.Contains(cmd.help, "Usage: codebridge") || !strings.Contains(cmd.help, cmd.name) {
				t.Errorf("help of %s does not start with its usage:\n%s", cmd.name, cmd.help)
			}
			for _, args := range [][]string{{cmd.name, "--help"}, {cmd.name, "-h"}, {"help", cmd.name}, {"--config-dir", "x", cmd.name, "--help"}} {
				out, stderr, code, done := parseArgs(t, args...)
				if code != 0 || !done || out != cmd.help || stderr != "" {
					t.Errorf("%v: exit %d, done %v, stderr %q, stdout:\n%s\nwant exit 0 and the help of %s", args, code, done, stderr, out, cmd.name)
				}
			}
		})
	}
}

// TestRunUnknownCommand: an unknown command is a usage error that names the
// commands there are.
func TestRunUnknownCommand(t *testing.T) {
	for _, args := range [][]string{{"frob"}, {"--config-dir", "x", "frob", "--help"}, {"exec-"}} {
		out, stderr, code, done := parseArgs(t, args...)
		if code != 2 || !done || out != "" {
			t.Errorf("%v: exit %d, done %v, stdout %q; want 2, true and none", args, code, done, out)
		}
		if !strings.Contains(stderr, "codebridge: unknown command") || !strings.Contains(stderr, "codebridge --help") {
			t.Errorf("%v: stderr %q", args, stderr)
		}
		for _, name := range append(commandNames(), "help") {
			if !strings.Contains(stderr, name) {
				t.Errorf("%v: stderr does not name %s: %q", args, name, stderr)
			}
		}
	}
}

// TestRunBadFlag: a flag a command does not define, or a bad value, is a
// usage error (2) that names the command, before anything runs.
func TestRunBadFlag(t *testing.T) {
	type flagCase struct {
		name string
		args []string
		want string // in stderr
	}
	tests := []flagCase{
		{"before the command", []string{"--frob", "servers"}, "codebridge: flag provided but not defined: -frob: see 'codebridge --help'"},
		{"no value", []string{"--config-dir"}, "codebridge: flag needs an argument: -config-dir"},
		{"exec --timeout", []string{"exec", "--timeout", "soon", "-"}, "codebridge exec: invalid value \"soon\" for flag -timeout"},
		{"serve --http", []string{"serve", "--http", "8080"}, "codebridge serve: --http \"8080\": want HOST:PORT"},
		{"extra argument", []string{"doctor", "now"}, "codebridge doctor: unexpected argument \"now\": see 'codebridge doctor --help'"},
	}
	for _, cmd := range commands() {
		tests = append(tests, flagCase{cmd.name, []string{cmd.name, "--frob"}, "codebridge " + cmd.name + ": flag provided but not defined: -frob: see 'codebridge " + cmd.name + " --help'"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code, done := parseArgs(t, tt.args...)
			if code != 2 || !done || out != "" || !strings.Contains(stderr, tt.want) {
				t.Errorf("%v: exit %d, done %v, stdout %q, stderr %q; want 2 and %q", tt.args, code, done, out, stderr, tt.want)
			}
		})
	}
}

// TestRunParses: a good command line is left to run, with its command and
// operands; no command is serve.
func TestRunParses(t *testing.T) {
	tests := []struct {
		args      []string
		cmd       string
		operands  []string
		configDir string
	}{
		{args: nil, cmd: "serve"},
		{args: []string{"--config-dir", "d"}, cmd: "serve", configDir: "d"},
		{args: []string{"serve", "--http", "127.0.0.1:0"}, cmd: "serve"},
		{args: []string{"exec", "--timeout", "5", "-"}, cmd: "exec", operands: []string{"-"}},
		{args: []string{"servers", "--config-dir", "d", "--tools"}, cmd: "servers", configDir: "d"},
		{args: []string{"memory", "show", "--", "-h"}, cmd: "memory", operands: []string{"show", "--", "-h"}},
	}
	for _, tt := range tests {
		var o, e bytes.Buffer
		inv, code, done := parse(tt.args, &o, &e)
		if done || code != 0 || inv.cmd == nil || inv.cmd.name != tt.cmd || strings.Join(inv.args, " ") != strings.Join(tt.operands, " ") || inv.configDir != tt.configDir {
			t.Errorf("%v: done %v, exit %d, %+v, stderr %q; want %s %q in %q", tt.args, done, code, inv, e.String(), tt.cmd, tt.operands, tt.configDir)
		}
	}
}
