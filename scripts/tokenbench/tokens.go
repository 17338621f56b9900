package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
)

// encodings are the tokenizers counted, by their gpt-tokenizer names:
// cl100k_base (GPT-4, GPT-3.5) and o200k_base (GPT-4o and later).
var encodings = []string{"cl100k_base", "o200k_base"}

// tokens is a count per encoding, in the order of [encodings].
type tokens [2]int

func (t tokens) add(u tokens) tokens { return tokens{t[0] + u[0], t[1] + u[1]} }

// countScript counts the tokens of each string of a JSON array read from
// stdin, with gpt-tokenizer from the clients' npm tree (argv[1]), and prints
// a JSON array of [cl100k, o200k] pairs.
const countScript = `const r = require("module").createRequire(process.argv[1] + "/package.json");
const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
const encs = JSON.parse(process.argv[2]).map(e => r("gpt-tokenizer/encoding/" + e));
console.log(JSON.stringify(texts.map(s => encs.map(e => e.encode(s).length))));`

// tokenizer counts tokens offline with gpt-tokenizer run by node.
type tokenizer struct {
	clients string // the clients' npm tree
}

// count returns the tokens of each text.
func (tk tokenizer) count(texts []string) ([]tokens, error) {
	in, err := json.Marshal(texts)
	if err != nil {
		return nil, err
	}
	encs, _ := json.Marshal(encodings)
	cmd := exec.Command("node", "-e", countScript, tk.clients, string(encs))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("counting tokens with gpt-tokenizer in %s: %w: %s", filepath.Join(tk.clients, "node_modules"), err, stderr.String())
	}
	var counts [][]int
	if err := json.Unmarshal(out, &counts); err != nil || len(counts) != len(texts) {
		return nil, fmt.Errorf("tokenizer output (%d counts for %d texts): %v", len(counts), len(texts), err)
	}
	res := make([]tokens, len(counts))
	for i, c := range counts {
		if len(c) != len(encodings) {
			return nil, fmt.Errorf("tokenizer output: %d counts for a text, want %d", len(c), len(encodings))
		}
		res[i] = tokens{c[0], c[1]}
	}
	return res, nil
}

// transcript is what one way puts in a model's context for a task: what it
// reads before the first turn (tool definitions and the prompt), and for
// each model turn what the model writes (calls or code) and reads back
// (results). The model's final answer is the same both ways and not counted.
type transcript struct {
	base   []string   // tool definitions, prompt
	writes [][]string // per turn with calls: the calls' JSON
	reads  [][]string // per turn with calls: the results
	extra  tokens     // tokens counted apart (images returned), read in the last turn with calls
}

// measure is a transcript's figures.
type measure struct {
	Turns   int    `json:"turns"`   // model turns: one per turn with calls, plus the final one
	Context tokens `json:"context"` // tokens in the context when the final turn starts
	Input   tokens `json:"input"`   // input tokens summed over the turns (each turn rereads the context)
	Output  tokens `json:"output"`  // tokens the model writes for calls or code
	Bytes   int    `json:"bytes"`   // bytes of the final context
}

// texts lists every string of the transcript, for one call to the counter.
func (tr transcript) texts() []string {
	all := append([]string(nil), tr.base...)
	for i := range tr.writes {
		all = append(all, tr.writes[i]...)
		all = append(all, tr.reads[i]...)
	}
	return all
}

// measureWith computes the figures from the counts of tr.texts(), in order.
func (tr transcript) measureWith(counts []tokens) measure {
	var m measure
	next := func(s string) tokens {
		t := counts[0]
		counts = counts[1:]
		m.Bytes += len(s)
		return t
	}
	var ctx tokens
	for _, s := range tr.base {
		ctx = ctx.add(next(s))
	}
	for i := range tr.writes {
		m.Input = m.Input.add(ctx) // the turn that writes these calls reads the context so far
		for _, s := range tr.writes[i] {
			t := next(s)
			m.Output = m.Output.add(t)
			ctx = ctx.add(t)
		}
		for _, s := range tr.reads[i] {
			ctx = ctx.add(next(s))
		}
	}
	ctx = ctx.add(tr.extra)
	m.Input = m.Input.add(ctx) // the final turn
	m.Context = ctx
	m.Turns = len(tr.writes) + 1
	return m
}
