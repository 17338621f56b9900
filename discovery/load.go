package discovery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// Options control how [Load] reads a folder.
type Options struct {
	// LookupEnv resolves ${VAR} and ${env:VAR}. Nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)

	// LeaveSecrets leaves ${keyring:...} and ${cmd:...} references as
	// written: no keyring is asked and no command run. For what only looks
	// at definitions, such as planning an import.
	LeaveSecrets bool

	// AllowSelf loads entries that would start codebridge itself (command
	// "codebridge", or args naming the codebridge-mcp/codebridge/cmd/codebridge
	// package). They are skipped with a warning otherwise, since a bridge that
	// loads its own folder starts itself again and again; the warning's
	// Err is [ErrSelfServer]. The caller sets it from its own settings.
	AllowSelf bool

	// CommandBudget bounds how long the ${cmd:...} references of one Load
	// may take together; zero means [DefaultCommandBudget]. They run
	// [CommandParallelism] at a time, each within [secret.CommandTimeout];
	// those still running when the budget is spent are stopped, those not
	// started are not run, and each is a problem of its server.
	CommandBudget time.Duration
}

const (
	// DefaultCommandBudget is the default [Options.CommandBudget].
	DefaultCommandBudget = 30 * time.Second
	// CommandParallelism is how many ${cmd:...} references one Load runs
	// at a time.
	CommandParallelism = 4
)

func (o Options) lookup(name string) (string, bool) {
	if o.LookupEnv != nil {
		return o.LookupEnv(name)
	}
	return os.LookupEnv(name)
}

// selfPackage is the import path that `go run` would be given to start
// codebridge.
const selfPackage = "codebridge-mcp/codebridge/cmd/codebridge"

// Load reads every *.json file in dir (in name order, hidden files skipped)
// and returns the servers they define.
//
// Nothing in the folder makes Load fail: what cannot be loaded becomes a
// [Problem] and the rest loads. A folder that does not exist gives an empty
// Config. prev is the snapshot from the previous Load of the same folder (nil
// the first time); it provides the last good definitions: when a file that
// exists cannot be read or parsed, the servers it defined in prev are kept,
// and so is the previous definition of a server whose entry became invalid.
// Servers of a deleted file, or removed from a file, are gone.
//
// When two files define the same name, the first in name order wins and the
// other is reported as a warning.
//
// A ${cmd:...} reference runs once per version of the file that holds it:
// when prev resolved the same reference in the same file, unchanged since (the
// same modification time and size), its value is reused, so a reload for a
// change elsewhere runs no command again; touching a file runs its commands
// again. A reference that failed runs again at the next Load. The commands
// that do run, run in parallel within [Options.CommandBudget].
func Load(dir string, prev *Config, opts Options) *Config {
	cfg := &Config{Dir: dir, files: map[string]map[string]*Server{}}
	var prevFiles map[string]map[string]*Server
	if prev != nil {
		prevFiles = prev.files
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return cfg
		}
		// The folder exists but cannot be listed: keep everything.
		cfg.Problems = append(cfg.Problems, Problem{
			Path:    dir,
			Message: fmt.Sprintf("cannot list the folder (%v): fix its permissions or make it a folder; keeping the servers loaded before", err),
		})
		for path, defs := range prevFiles {
			cfg.files[path] = defs
		}
		cfg.commands = prev.commandsOrNil()
		cfg.merge()
		return cfg
	}

	var files []*fileLoader
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || filepath.Ext(name) != ".json" {
			continue // hidden files are editor temp and lock files
		}
		path := filepath.Join(dir, name)
		info, err := os.Stat(path) // follows symlinks
		if err != nil || !info.Mode().IsRegular() {
			continue // gone since ReadDir, a dangling link, or a folder
		}
		l := &fileLoader{path: path, id: fileID{info.ModTime().UnixNano(), info.Size()}, prev: prevFiles[path], opts: opts}
		if l.parse() {
			files = append(files, l)
		}
	}
	var refs []commandKey
	for _, l := range files {
		refs = append(refs, l.commands()...)
	}
	resolved := resolveCommands(refs, prev.commandsOrNil(), cmp.Or(opts.CommandBudget, DefaultCommandBudget))
	for _, l := range files {
		cfg.files[l.path] = l.finish(resolved)
		cfg.Problems = append(cfg.Problems, l.problems...)
	}
	for k, r := range resolved {
		if r.err == nil {
			if cfg.commands == nil {
				cfg.commands = map[commandKey]secret.Value{}
			}
			cfg.commands[k] = r.v
		}
	}
	cfg.merge()
	return cfg
}

// fileID tells versions of a file apart, for reusing what a ${cmd:...}
// reference in it printed.
type fileID struct {
	mtime int64 // modification time, in ns
	size  int64
}

// commandKey is one ${cmd:...} reference in one version of one file.
type commandKey struct {
	path string
	id   fileID
	ref  string // what follows "cmd:"
}

// commandResult is what a ${cmd:...} reference resolved to.
type commandResult struct {
	v   secret.Value
	err error
}

// commandsOrNil is what c's Load resolved of the ${cmd:...} references; nil
// for a nil c.
func (c *Config) commandsOrNil() map[commandKey]secret.Value {
	if c == nil {
		return nil
	}
	return c.commands
}

// resolveCommands resolves refs, reusing the values in known, and running
// the others [CommandParallelism] at a time within budget.
func resolveCommands(refs []commandKey, known map[commandKey]secret.Value, budget time.Duration) map[commandKey]commandResult {
	out := make(map[commandKey]commandResult, len(refs))
	var todo []commandKey
	for _, k := range refs {
		if _, seen := out[k]; seen {
			continue
		}
		if v, ok := known[k]; ok {
			out[k] = commandResult{v: v}
			continue
		}
		out[k] = commandResult{} // placeholder, so a repeated reference runs once
		todo = append(todo, k)
	}
	if len(todo) == 0 {
		return out
	}
	// Load has no context: the budget is the bound.
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var (
		g  errgroup.Group
		mu sync.Mutex // protects out while the commands run
	)
	g.SetLimit(CommandParallelism)
	for _, k := range todo {
		g.Go(func() error {
			var r commandResult
			if ctx.Err() != nil {
				r.err = fmt.Errorf("not run: the %s budget that all the ${cmd:...} references of one load share (%d at a time) was spent before its turn: make the slow commands faster, or sign in to their password manager, then save the file to run them again", budget, CommandParallelism)
			} else {
				r.v, r.err = secret.Command(ctx, k.ref, secret.CommandTimeout)
				if r.err != nil && ctx.Err() != nil {
					r.err = fmt.Errorf("stopped: the %s budget that all the ${cmd:...} references of one load share (%d at a time) ran out while it ran: check that it does not wait for input (a password prompt), or sign in to it first, then save the file to run it again", budget, CommandParallelism)
				}
			}
			mu.Lock()
			out[k] = r
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait() // the functions return nil: errors are in out
	return out
}

// merge builds Servers from files: files in name order, first definition of a
// name wins.
func (c *Config) merge() {
	paths := make([]string, 0, len(c.files))
	for p := range c.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	winner := map[string]string{}
	for _, path := range paths {
		defs := c.files[path]
		for _, name := range sortedKeys(defs) {
			if first, ok := winner[name]; ok {
				line, col := serverPosition(path, name)
				c.Problems = append(c.Problems, Problem{
					Path:    path,
					Server:  name,
					Line:    line,
					Column:  col,
					Message: fmt.Sprintf("also defined in %s, whose definition is used (files load in name order): rename or remove one of them", first),
					Warning: true,
				})
				continue
			}
			winner[name] = path
			c.Servers = append(c.Servers, defs[name])
		}
	}
	sort.Slice(c.Servers, func(i, j int) bool { return c.Servers[i].Name < c.Servers[j].Name })
	sortProblems(c.Problems)
}

// serverPosition finds where path defines server name, for a warning found
// after the file was loaded; 0, 0 if it cannot tell.
func serverPosition(path, name string) (line, col int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	pos := keyOffsets(data)
	for _, section := range []string{"mcpServers", "servers"} {
		if off, ok := pos[section+"\x00"+name]; ok {
			return lineCol(data, off)
		}
	}
	return 0, 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fileLoader holds the state of loading one file: [fileLoader.parse]
// validates its entries, then, once the ${cmd:...} references that
// [fileLoader.commands] lists are resolved, [fileLoader.finish] expands them.
type fileLoader struct {
	path     string
	id       fileID
	data     []byte
	prev     map[string]*Server // the file's last good definitions
	opts     Options
	pos      map[string]int // byte offset of each key path; built on first use
	problems []Problem

	defs    map[string]*Server // the file's servers; those of entries not yet expanded
	entries []entry            // the valid entries, to expand
}

// entry is a valid server entry whose references are not expanded yet.
type entry struct {
	section string
	s       *Server
	oauth   *rawOAuth
}

// parse reads and validates the file. It reports false when the file
// vanished before it could be read.
func (l *fileLoader) parse() (exists bool) {
	// The bytes are kept so that problems can be given a line and column in
	// exactly what was parsed.
	var raw map[string]any
	data, err := os.ReadFile(filepath.Clean(l.path))
	l.data = data
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err == nil {
		err = json.Unmarshal(data, &raw)
	}
	if err == nil {
		if c := firstNonSpace(l.data); c != '{' {
			err = errNotObject
		}
	}
	if err != nil {
		l.defs = l.broken(err)
		return true
	}

	fileDesc := ""
	if v, ok := raw["description"]; ok {
		if s, ok := v.(string); ok {
			fileDesc = s
		} else {
			l.problem("", []string{"description"}, fmt.Sprintf(`"description" must be a string, found %s: quote it`, kind(v)), false)
		}
	}

	defs := map[string]*Server{}
	l.defs = defs
	found := false
	for _, section := range []string{"mcpServers", "servers"} {
		v, ok := raw[section]
		if !ok {
			continue
		}
		found = true
		m, ok := v.(map[string]any)
		if !ok {
			l.problem("", []string{section}, fmt.Sprintf(`%q must be an object mapping server names to definitions, found %s`, section, kind(v)), false)
			if len(l.prev) > 0 {
				l.problems[len(l.problems)-1].Message += l.keeping()
			}
			l.defs, l.entries = l.prev, nil
			return true
		}
		for _, name := range sortedKeys(m) {
			if _, dup := defs[name]; dup {
				l.problem(name, []string{section, name}, `also defined under "mcpServers", whose definition is used: keep one`, true)
				continue
			}
			s, oauth, ok := l.server(section, name, m[name], fileDesc)
			if s != nil {
				defs[name] = s
				l.entries = append(l.entries, entry{section, s, oauth})
			} else if !ok {
				l.keepPrevious(name)
			}
		}
	}
	if !found {
		l.problem("", nil, `no "mcpServers" object (or VS Code's "servers"): write {"mcpServers": {"name": {"command": "...", "args": []}}}`, true)
	}
	return true
}

// keepPrevious keeps the previous definition of server name, if any, in
// place of an entry that became invalid, saying so in the last problem.
func (l *fileLoader) keepPrevious(name string) {
	if old := l.prev[name]; old != nil {
		l.defs[name] = old
		l.problems[len(l.problems)-1].Message += "; keeping its previous definition until this is fixed"
	} else {
		delete(l.defs, name)
	}
}

// resolves reports whether e's secret references are to be resolved: not
// for a disabled server, which keeps them as written (it will not start, so
// a missing token is no error yet, and no keyring is asked nor command run
// for it), nor with [Options.LeaveSecrets].
func (l *fileLoader) resolves(e entry) bool {
	return !e.s.Disabled && !l.opts.LeaveSecrets
}

// eachField calls visit on each field of e that may hold ${...} references,
// with its label and key path, and sets the field to what visit returns.
func (e entry) eachField(visit func(v, label string, keys ...string) string) {
	s := e.s
	s.Command = visit(s.Command, "command", "command")
	s.Cwd = visit(s.Cwd, "cwd", "cwd")
	s.URL = visit(s.URL, "url", "url")
	for i, a := range s.Args {
		s.Args[i] = visit(a, fmt.Sprintf("args[%d]", i), "args", fmt.Sprint(i))
	}
	for _, k := range sortedKeys(s.Env) {
		s.Env[k] = visit(s.Env[k], "env."+k, "env", k)
	}
	for _, k := range sortedKeys(s.Headers) {
		s.Headers[k] = visit(s.Headers[k], "headers."+k, "headers", k)
	}
	if e.oauth != nil {
		e.oauth.id = visit(e.oauth.id, "oauth.clientId", "oauth", "clientId")
		e.oauth.secret = visit(e.oauth.secret, "oauth.clientSecret", "oauth", "clientSecret")
	}
}

// commands lists the ${cmd:...} references that finish will resolve, in the
// order it meets them.
func (l *fileLoader) commands() []commandKey {
	var refs []commandKey
	note := func(kind, ref string) (secret.Value, error) {
		if kind == "cmd" {
			refs = append(refs, commandKey{l.path, l.id, ref})
		}
		return secret.Value{}, nil
	}
	for _, e := range l.entries {
		if !l.resolves(e) {
			continue
		}
		e.eachField(func(v, _ string, _ ...string) string {
			_, _ = expandVars(v, l.opts.lookup, note, nil) // its errors are finish's to report
			return v
		})
	}
	return refs
}

// finish expands the references of the file's valid entries, with the
// ${cmd:...} references resolved as given, and returns the file's servers.
func (l *fileLoader) finish(cmds map[commandKey]commandResult) map[string]*Server {
	for _, e := range l.entries {
		if !l.expand(e, cmds) {
			l.keepPrevious(e.s.Name)
		} else if l.skipSelf(e) {
			delete(l.defs, e.s.Name)
		}
	}
	l.entries = nil
	return l.defs
}

var errNotObject = errors.New("not an object")

// broken reports a file that cannot be used at all and returns its last good
// servers.
func (l *fileLoader) broken(err error) map[string]*Server {
	p := Problem{Path: l.path}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case len(bytes.TrimSpace(l.data)) == 0 && (errors.As(err, &syn) || errors.Is(err, errNotObject)):
		p.Message = `the file is empty: write {"mcpServers": {}} or delete it`
	case errors.As(err, &syn):
		off := int(syn.Offset) - 1 // Offset counts the byte that failed
		p.Line, p.Column = lineCol(l.data, max(off, 0))
		p.Message = fmt.Sprintf("invalid JSON: %v: fix the file (no comments or trailing commas allowed)", syn)
	case errors.As(err, &typ), errors.Is(err, errNotObject):
		off := firstNonSpaceOffset(l.data)
		p.Line, p.Column = lineCol(l.data, off)
		p.Message = fmt.Sprintf(`the file must hold a JSON object like {"mcpServers": {...}}, found %s`, jsonKindAt(l.data, off))
	case l.data == nil:
		p.Message = fmt.Sprintf("cannot read the file: %v: fix its permissions", err)
	default:
		p.Message = err.Error()
	}
	if len(l.prev) > 0 {
		p.Message += l.keeping()
	}
	l.problems = append(l.problems, p)
	return l.prev
}

func (l *fileLoader) keeping() string {
	return fmt.Sprintf("; keeping the servers it defined before (%s) until this is fixed", strings.Join(sortedKeys(l.prev), ", "))
}

// problem records a problem at the key path keys (nil: the file itself).
func (l *fileLoader) problem(server string, keys []string, msg string, warning bool) {
	p := Problem{Path: l.path, Server: server, Message: msg, Warning: warning}
	if len(keys) > 0 {
		if l.pos == nil {
			l.pos = keyOffsets(l.data)
		}
		if off, ok := l.pos[strings.Join(keys, "\x00")]; ok {
			p.Line, p.Column = lineCol(l.data, off)
		}
	}
	l.problems = append(l.problems, p)
}

// server validates one entry. It returns the server, its references not yet
// expanded, and its "oauth" object as written, or nil and ok=false when it is
// invalid (the last problem recorded says why).
func (l *fileLoader) server(section, name string, v any, fileDesc string) (s *Server, oauth *rawOAuth, ok bool) {
	at := func(field ...string) []string { return append([]string{section, name}, field...) }
	m, isObj := v.(map[string]any)
	if !isObj {
		l.problem(name, at(), fmt.Sprintf(`the definition must be an object like {"command": "...", "args": []} or {"url": "..."}, found %s`, kind(v)), false)
		return nil, nil, false
	}
	nProblems := len(l.problems)
	bad := func(field, msg string) { l.problem(name, at(field), msg, false) }

	str := func(field string) (string, bool) {
		v, present := m[field]
		if !present {
			return "", false
		}
		s, isStr := v.(string)
		if !isStr {
			bad(field, fmt.Sprintf("%q must be a string, found %s", field, kind(v)))
			return "", false
		}
		return s, true
	}
	strMap := func(field string) map[string]string {
		v, present := m[field]
		if !present {
			return nil
		}
		obj, isObj := v.(map[string]any)
		if !isObj {
			bad(field, fmt.Sprintf(`%q must be an object of strings like {"KEY": "value"}, found %s`, field, kind(v)))
			return nil
		}
		out := make(map[string]string, len(obj))
		for _, k := range sortedKeys(obj) {
			s, isStr := obj[k].(string)
			if !isStr {
				l.problem(name, at(field, k), fmt.Sprintf("%s.%s must be a string, found %s: quote it", field, k, kind(obj[k])), false)
				continue
			}
			out[k] = s
		}
		return out
	}

	s = &Server{Name: name, Source: l.path, Description: fileDesc}
	command, hasCmd := str("command")
	url, hasURL := str("url")
	typ, _ := str("type")
	if d, present := str("description"); present {
		s.Description = d
	}
	s.Cwd, _ = str("cwd")
	if v, present := m["disabled"]; present {
		b, isBool := v.(bool)
		if !isBool {
			bad("disabled", fmt.Sprintf(`"disabled" must be true or false, found %s`, kind(v)))
		}
		s.Disabled = b
	}
	for _, f := range []struct {
		key    string
		refuse *bool
	}{{"elicitation", &s.NoElicitation}, {"sampling", &s.NoSampling}} {
		key, refuse := f.key, f.refuse
		if v, present := m[key]; present {
			b, isBool := v.(bool)
			if !isBool {
				bad(key, fmt.Sprintf(`%q must be true or false, found %s`, key, kind(v)))
			}
			*refuse = !b
		}
	}
	if v, present := m["trust"]; present {
		switch t, _ := v.(string); t {
		case "scan":
		case "trusted":
			s.Trusted = true
		default:
			bad("trust", fmt.Sprintf(`"trust" must be "scan" (the default: each new or changed tool definition is scanned for tool poisoning before it is pinned) or "trusted" (not scanned), found %s`, kind(v)))
		}
	}
	if v, present := m["args"]; present {
		arr, isArr := v.([]any)
		if !isArr {
			bad("args", fmt.Sprintf(`"args" must be an array of strings like ["-y", "pkg"], found %s`, kind(v)))
		}
		for i, a := range arr {
			as, isStr := a.(string)
			if !isStr {
				l.problem(name, at("args", fmt.Sprint(i)), fmt.Sprintf("args[%d] must be a string, found %s: quote it", i, kind(a)), false)
				continue
			}
			s.Args = append(s.Args, as)
		}
	}
	s.Env = strMap("env")
	s.Headers = strMap("headers")
	oauth = l.oauth(name, m, at)
	s.Tools = l.toolPolicy(name, m, at)
	s.MaxConcurrency = l.maxConcurrency(name, m, at)

	hasCmd = hasCmd && strings.TrimSpace(command) != ""
	hasURL = hasURL && strings.TrimSpace(url) != ""
	switch strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(typ)) {
	case "":
		switch {
		case hasCmd:
			s.Transport = Stdio
		case hasURL:
			s.Transport = Streamable
		}
	case "stdio":
		s.Transport = Stdio
	case "http", "streamablehttp":
		s.Transport = Streamable
	case "sse":
		s.Transport = SSE
	default:
		bad("type", fmt.Sprintf(`unknown "type" %q: use "stdio", "http" (or "streamable-http") or "sse"`, typ))
	}
	switch {
	case len(l.problems) > nProblems:
		// a field error is already reported
	case hasCmd && hasURL:
		l.problem(name, at(), `has both "command" and "url": keep "command" for a local server or "url" for a remote one`, false)
	case !hasCmd && !hasURL:
		l.problem(name, at(), `needs "command" (a local server started by codebridge) or "url" (a remote server)`, false)
	case s.Transport == Stdio && !hasCmd:
		l.problem(name, at("type"), `"type": "stdio" needs "command": add it, or set "type" to "http" or "sse" for a url`, false)
	case s.Transport != Stdio && hasCmd:
		l.problem(name, at("type"), fmt.Sprintf(`"type": %q needs "url", not "command": remove "type" for a local server`, typ), false)
	}
	if len(l.problems) > nProblems {
		return nil, nil, false
	}

	if s.Transport == Stdio {
		s.Command = command
		s.URL, s.Headers = "", nil
		if oauth != nil {
			l.problem(name, at("oauth"), `"oauth" is for servers reached by "url": remove it from a local server`, false)
			return nil, nil, false
		}
	} else {
		s.URL = url
		s.Args, s.Env, s.Cwd = nil, nil, ""
	}
	return s, oauth, true
}

// expand expands ${VAR} and resolves secrets in e, with the ${cmd:...}
// references resolved as given; false when one fails (the last problem
// recorded says why).
func (l *fileLoader) expand(e entry, cmds map[commandKey]commandResult) bool {
	s, nProblems := e.s, len(l.problems)
	var resolve func(kind, ref string) (secret.Value, error) // nil leaves secrets as written
	if l.resolves(e) {
		resolve = func(kind, ref string) (v secret.Value, err error) {
			switch r, ok := cmds[commandKey{l.path, l.id, ref}]; {
			case kind != "cmd":
				v, err = resolveSecret(kind, ref)
			case ok:
				v, err = r.v, r.err
			default: // commands missed it: the environment changed meanwhile
				v, err = secret.Command(context.Background(), ref, secret.CommandTimeout)
			}
			return v, err
		}
	}
	var found *secret.List // where expandVars records the secrets it reads
	if resolve != nil {
		found = &s.Secrets
	}
	e.eachField(func(v, label string, keys ...string) string {
		out, err := expandVars(v, l.opts.lookup, resolve, found)
		if err != nil {
			if !s.Disabled {
				l.problem(s.Name, append([]string{e.section, s.Name}, keys...), fmt.Sprintf("%s: %v", label, err), false)
			}
			return v
		}
		return out
	})
	if found != nil {
		// Values under keys that name a secret, however written.
		for _, kv := range []map[string]string{s.Env, s.Headers} {
			for _, k := range sortedKeys(kv) {
				if secretKey(k) {
					addKeyed(found, kv[k])
				}
			}
		}
	}
	if o := e.oauth; o != nil {
		s.OAuth = &OAuth{ClientID: o.id, ClientSecret: secret.New(o.secret), Scopes: o.scopes}
		s.Secrets.Add(s.OAuth.ClientSecret)
	}
	return len(l.problems) == nProblems
}

// skipSelf reports, as a warning, an entry that would start codebridge
// itself, unless [Options.AllowSelf].
func (l *fileLoader) skipSelf(e entry) bool {
	s := e.s
	if l.opts.AllowSelf || s.Transport != Stdio || !isSelf(s) {
		return false
	}
	l.problem(s.Name, []string{e.section, s.Name}, "skipped: "+ErrSelfServer.Error(), true)
	l.problems[len(l.problems)-1].Err = ErrSelfServer
	return true
}

// rawOAuth is an entry's "oauth" object as written, before expansion.
type rawOAuth struct {
	id, secret string
	scopes     []string
}

// oauth reads an entry's "oauth" object; a problem with it makes the entry
// invalid.
func (l *fileLoader) oauth(name string, m map[string]any, at func(...string) []string) *rawOAuth {
	v, present := m["oauth"]
	if !present {
		return nil
	}
	bad := func(msg string, keys ...string) { l.problem(name, at(keys...), msg, false) }
	obj, isObj := v.(map[string]any)
	if !isObj {
		bad(fmt.Sprintf(`"oauth" must be an object like {"clientId": "...", "clientSecret": "${keyring:SERVICE/ACCOUNT}", "scopes": ["read"]}, found %s`, kind(v)), "oauth")
		return nil
	}
	var o rawOAuth
	for _, k := range sortedKeys(obj) {
		switch k {
		case "clientId", "clientSecret":
			s, isStr := obj[k].(string)
			if !isStr {
				bad(fmt.Sprintf("oauth.%s must be a string, found %s", k, kind(obj[k])), "oauth", k)
				continue
			}
			if k == "clientId" {
				o.id = s
			} else {
				o.secret = s
			}
		case "scopes":
			arr, isArr := obj[k].([]any)
			if !isArr {
				bad(fmt.Sprintf(`oauth.scopes must be an array of strings like ["read", "write"], found %s`, kind(obj[k])), "oauth", k)
				continue
			}
			for i, e := range arr {
				sc, isStr := e.(string)
				if !isStr || strings.TrimSpace(sc) == "" || strings.ContainsAny(sc, " \t") {
					bad(fmt.Sprintf("oauth.scopes[%d] must be one scope, a string without spaces", i), "oauth", k, fmt.Sprint(i))
					continue
				}
				o.scopes = append(o.scopes, sc)
			}
		default:
			bad(fmt.Sprintf(`unknown key %q in "oauth": use "clientId", "clientSecret" and "scopes"`, k), "oauth", k)
		}
	}
	if o.secret != "" && o.id == "" {
		bad(`oauth.clientSecret needs oauth.clientId: add the client's id`, "oauth")
	}
	return &o
}

// nilIfEmpty is s, or nil when s is empty.
func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// MaxConcurrencyLimit is the largest "maxConcurrency" an entry may set.
const MaxConcurrencyLimit = 1 << 16

// maxConcurrency reads an entry's "maxConcurrency": how many tool calls the
// server is given at once, a whole number from 1 to [MaxConcurrencyLimit];
// 0 when absent. A wrong value makes the entry invalid, so a server meant
// to take one call at a time is never sent many.
func (l *fileLoader) maxConcurrency(name string, m map[string]any, at func(...string) []string) int {
	const key = "maxConcurrency"
	l.misspelt(name, m, at, key)
	v, present := m[key]
	if !present {
		return 0
	}
	if f, isNum := v.(float64); isNum && f == math.Trunc(f) && f >= 1 && f <= MaxConcurrencyLimit {
		return int(f)
	}
	l.problem(name, at(key), fmt.Sprintf(`%q must be a whole number from 1 to %d, the tool calls the server is given at once, found %s`,
		key, MaxConcurrencyLimit, kind(v)), false)
	return 0
}

// misspelt reports, as a problem of the entry, each key of m that is key
// spelt another way (maxconcurrency, max_concurrency, read-only).
func (l *fileLoader) misspelt(name string, m map[string]any, at func(...string) []string, key string) {
	for _, k := range sortedKeys(m) {
		if k != key && strings.EqualFold(strings.NewReplacer("_", "", "-", "").Replace(k), key) {
			l.problem(name, at(k), fmt.Sprintf(`unknown key %q: write %q (this spelling)`, k, key), false)
		}
	}
}

// toolPolicy reads an entry's "tools", "readOnly" and "confirmWrites"; a
// problem with them makes the entry invalid, so a mistyped policy never
// silently admits every tool or calls one without asking.
func (l *fileLoader) toolPolicy(name string, m map[string]any, at func(...string) []string) ToolPolicy {
	var p ToolPolicy
	bad := func(msg string, keys ...string) { l.problem(name, at(keys...), msg, false) }
	flag := func(key string) *bool {
		l.misspelt(name, m, at, key)
		v, present := m[key]
		if !present {
			return nil
		}
		b, isBool := v.(bool)
		if !isBool {
			bad(fmt.Sprintf(`%q must be true or false, found %s`, key, kind(v)), key)
			return nil
		}
		return &b
	}
	p.ReadOnly, p.ConfirmWrites = flag("readOnly"), flag("confirmWrites")
	v, present := m["tools"]
	if !present {
		return p
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		bad(fmt.Sprintf(`"tools" must be an object like {"allow": ["read_*"], "deny": ["delete_*"]}, found %s`, kind(v)), "tools")
		return p
	}
	list := func(key string) []string {
		v, present := obj[key]
		if !present {
			return nil
		}
		arr, isArr := v.([]any)
		if !isArr {
			bad(fmt.Sprintf(`"tools.%s" must be an array of tool names or globs like ["read_*"], found %s`, key, kind(v)), "tools", key)
			return nil
		}
		out := []string{}
		for i, e := range arr {
			pat, isStr := e.(string)
			if !isStr {
				bad(fmt.Sprintf("tools.%s[%d] must be a string, found %s: quote it", key, i, kind(e)), "tools", key, fmt.Sprint(i))
				continue
			}
			if err := CheckPattern(pat); err != nil {
				bad(fmt.Sprintf("tools.%s[%d]: %v", key, i, err), "tools", key, fmt.Sprint(i))
				continue
			}
			out = append(out, pat)
		}
		return out
	}
	p.Allow, p.Deny, p.Confirm = list("allow"), list("deny"), list("confirm")
	for _, k := range sortedKeys(obj) {
		if k != "allow" && k != "deny" && k != "confirm" {
			bad(fmt.Sprintf(`unknown key %q in "tools": use "allow", "deny" and "confirm" (lists of tool names or globs)`, k), "tools", k)
		}
	}
	// Present but empty lists say nothing, as missing ones do.
	p.Allow, p.Deny, p.Confirm = nilIfEmpty(p.Allow), nilIfEmpty(p.Deny), nilIfEmpty(p.Confirm)
	return p
}

func isSelf(s *Server) bool {
	base := filepath.Base(strings.ReplaceAll(s.Command, `\`, "/"))
	if base == "codebridge" || base == "codebridge.exe" {
		return true
	}
	for _, a := range s.Args {
		if strings.Contains(a, selfPackage) {
			return true
		}
	}
	return false
}

// secretKey reports whether an env or headers key names a secret:
// Authorization, or a name holding token, key, secret or password, in any
// case. Its value is masked whether written literally or by reference.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	return slices.ContainsFunc([]string{"authorization", "token", "key", "secret", "password"}, func(w string) bool { return strings.Contains(k, w) })
}

// addKeyed adds v, the value of a key that names a secret, to found: whole,
// and the credential after its scheme ("Bearer TOKEN"), which a server may
// echo alone.
func addKeyed(found *secret.List, v string) {
	found.Add(secret.New(v))
	if _, cred, ok := strings.Cut(v, " "); ok {
		found.Add(secret.New(strings.TrimSpace(cred)))
	}
}

// expandVars replaces ${VAR}, ${env:VAR}, ${VAR:-default},
// ${keyring:SERVICE/ACCOUNT} and ${cmd:COMMAND ARGS} in s. The last two are
// secrets, which resolve reads (kind is "keyring" or "cmd", ref what follows
// the colon); no error holds one. A nil resolve leaves them as written. The
// values of the last three (${env:VAR} as read from the environment, not a
// default) are secrets: each is added to found, for masking, unless found
// is nil.
func expandVars(s string, lookup func(string) (string, bool), resolve func(kind, ref string) (secret.Value, error), found *secret.List) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unclosed %q: end the reference with }", s[i:])
		}
		ref := s[i+2 : i+end]
		s = s[i+end+1:]

		if kind, rest, ok := strings.Cut(ref, ":"); ok && (kind == "keyring" || kind == "cmd") {
			if resolve == nil {
				b.WriteString("${" + ref + "}")
				continue
			}
			v, err := resolve(kind, rest)
			if err != nil {
				return "", fmt.Errorf("${%s}: %w", ref, err)
			}
			if found != nil {
				found.Add(v)
			}
			b.WriteString(v.Reveal())
			continue
		}
		name, def, hasDef := strings.Cut(strings.TrimPrefix(ref, "env:"), ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("unsupported reference ${%s}: only ${VAR}, ${env:VAR}, ${VAR:-default}, ${keyring:SERVICE/ACCOUNT} and ${cmd:COMMAND} are expanded", ref)
		}
		v, ok := lookup(name)
		switch {
		case ok:
			if found != nil && strings.HasPrefix(ref, "env:") {
				found.Add(secret.New(v))
			}
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			return "", fmt.Errorf("undefined variable ${%s}: set %s in codebridge's environment, or give a default with ${%s:-value}", ref, name, name)
		}
	}
}

// resolveSecret reads the secret of a ${keyring:REF} reference, with an
// error that says what to do.
func resolveSecret(kind, ref string) (secret.Value, error) {
	if kind != "keyring" {
		return secret.Value{}, fmt.Errorf("no %s: secret", kind)
	}
	r, err := secret.ParseRef(ref)
	if err != nil {
		return secret.Value{}, err
	}
	v, err := secret.Get(r)
	switch {
	case errors.Is(err, secret.ErrNotFound):
		return v, fmt.Errorf("%w: run 'codebridge secret set %s' to store it", secret.ErrNotFound, r)
	case errors.Is(err, secret.ErrNoKeyring):
		return v, fmt.Errorf("%w: the reference cannot resolve here; use ${cmd:...} with a password manager's CLI, or ${env:NAME}", err)
	}
	return v, err
}

func validVarName(n string) bool {
	if n == "" || (n[0] >= '0' && n[0] <= '9') {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// kind names the JSON type of a decoded value for messages.
func kind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case float64:
		return fmt.Sprintf("number %v", v)
	case string:
		return fmt.Sprintf("string %q", v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func jsonKindAt(data []byte, off int) string {
	if off >= len(data) {
		return "nothing"
	}
	switch c := data[off]; {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 'n':
		return "null"
	case c == 't' || c == 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

func firstNonSpaceOffset(data []byte) int {
	return len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
}

func firstNonSpace(data []byte) byte {
	if off := firstNonSpaceOffset(data); off < len(data) {
		return data[off]
	}
	return 0
}

// lineCol converts a byte offset into a 1-based line and column; the column
// counts characters, as editors do.
func lineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, 1 + len([]rune(string(before[lineStart:])))
}

// keyOffsets maps every key path in a JSON document (keys joined by "\x00";
// array elements by their index) to the byte offset where the key (or
// element) starts. It is best effort: it stops at the first syntax error.
func keyOffsets(data []byte) map[string]int {
	out := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	skip := func(off int64) int {
		i := int(off)
		for i < len(data) && strings.IndexByte(" \t\r\n,:", data[i]) >= 0 {
			i++
		}
		return i
	}
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		delim, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		sep := ""
		if path != "" {
			sep = "\x00"
		}
		for i := 0; dec.More(); i++ {
			start := skip(dec.InputOffset())
			key := fmt.Sprint(i)
			if delim == '{' {
				tok, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ = tok.(string)
			}
			out[path+sep+key] = start
			if err := walk(path + sep + key); err != nil {
				return err
			}
		}
		_, err = dec.Token() // closing delimiter
		return err
	}
	_ = walk("")
	return out
}
