package discovery

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// Config is one immutable snapshot of a folder of server definitions. It is
// built by [Load] and never modified afterwards; a reload produces a new one.
type Config struct {
	Dir      string    // the folder that was read
	Servers  []*Server // sorted by Name; includes disabled servers
	Problems []Problem // what could not be loaded, or was skipped, sorted by Path and position

	// files holds, for every *.json file that still exists, the last good
	// definition of each server it defines (including ones shadowed by an
	// earlier file), so the next Load can keep them if the file breaks.
	files map[string]map[string]*Server

	// commands holds what each ${cmd:...} reference this Load resolved
	// printed, so the next Load reuses it for an unchanged file.
	commands map[commandKey]secret.Value
}

// Server returns the server called name, or nil.
func (c *Config) Server(name string) *Server {
	if c == nil {
		return nil
	}
	i, ok := slices.BinarySearchFunc(c.Servers, name, func(s *Server, n string) int {
		return strings.Compare(s.Name, n)
	})
	if !ok {
		return nil
	}
	return c.Servers[i]
}

// Names returns the names of all servers, sorted.
func (c *Config) Names() []string {
	if c == nil {
		return nil
	}
	names := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		names[i] = s.Name
	}
	return names
}

// Equal reports whether c and o hold the same servers (compared with
// [Server.Equal] and by Source) and the same problems. A nil Config equals an
// empty one.
func (c *Config) Equal(o *Config) bool {
	var cs, os []*Server
	var cp, op []Problem
	if c != nil {
		cs, cp = c.Servers, c.Problems
	}
	if o != nil {
		os, op = o.Servers, o.Problems
	}
	return slices.EqualFunc(cs, os, func(a, b *Server) bool {
		return a.Equal(b) && a.Source == b.Source
	}) && slices.Equal(cp, op)
}

// Equal reports whether s and o define the same server: every field but
// Source, since moving a definition to another file changes nothing about how
// to reach it, and Secrets, which are written into the other fields. Nil and
// empty Args, Env and Headers are equal.
func (s *Server) Equal(o *Server) bool {
	return s.SameEndpoint(o) && (s == nil || s.Description == o.Description && s.Tools.Equal(o.Tools) &&
		s.NoElicitation == o.NoElicitation && s.NoSampling == o.NoSampling)
}

// SameEndpoint reports whether s and o reach the same server in the same way:
// [Server.Equal] but for the Description and the tool and client policy, which change
// nothing about a running server, so a pool keeps its process.
func (s *Server) SameEndpoint(o *Server) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Name == o.Name &&
		s.Disabled == o.Disabled &&
		s.Transport == o.Transport &&
		s.Command == o.Command &&
		slices.Equal(s.Args, o.Args) &&
		maps.Equal(s.Env, o.Env) &&
		s.Cwd == o.Cwd &&
		s.URL == o.URL &&
		maps.Equal(s.Headers, o.Headers) &&
		s.OAuth.Equal(o.OAuth) &&
		// A change of trust restarts the server, whose fresh listing is
		// then checked under it.
		s.Trusted == o.Trusted &&
		// The limit is the running session's: a new one restarts it.
		s.MaxConcurrency == o.MaxConcurrency
}

// Diff compares two snapshots by server name: added are in newCfg only,
// removed in oldCfg only, changed in both but not [Server.Equal]. Each list is
// sorted; nil snapshots count as empty. A server that was disabled or enabled
// is "changed"; check [Server.Disabled].
func Diff(oldCfg, newCfg *Config) (added, removed, changed []string) {
	var olds, news []*Server
	if oldCfg != nil {
		olds = oldCfg.Servers
	}
	if newCfg != nil {
		news = newCfg.Servers
	}
	i, j := 0, 0
	for i < len(olds) || j < len(news) {
		switch {
		case j == len(news) || (i < len(olds) && olds[i].Name < news[j].Name):
			removed = append(removed, olds[i].Name)
			i++
		case i == len(olds) || news[j].Name < olds[i].Name:
			added = append(added, news[j].Name)
			j++
		default:
			if !olds[i].Equal(news[j]) {
				changed = append(changed, news[j].Name)
			}
			i++
			j++
		}
	}
	return added, removed, changed
}

// Problem is something in the folder that could not be loaded, or was loaded
// with a caveat (Warning). Its Message says what to change.
type Problem struct {
	Path    string // the file (or, for an unreadable folder, the folder)
	Server  string // the server entry concerned; empty for the whole file
	Line    int    // 1-based line in Path; 0 when unknown
	Column  int    // 1-based column (in characters); 0 when unknown
	Message string // what is wrong and how to fix it
	Warning bool   // true when nothing is broken but something was skipped or shadowed
	// Err is the cause, for a caller that words it, when Message repeats a
	// typed error such as [ErrSelfServer]; nil otherwise.
	Err error
}

// ErrSelfServer is the cause of the warning that skips an entry that would
// start codebridge itself (see [Options.AllowSelf]).
var ErrSelfServer = errors.New("it would start codebridge inside codebridge; remove it, or allow servers that start codebridge to nest bridges on purpose")

// String formats p like a compiler message:
// "path:line:col: server "name": message".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Path)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	if p.Warning {
		b.WriteString("warning: ")
	}
	if p.Server != "" {
		fmt.Fprintf(&b, "server %q: ", p.Server)
	}
	b.WriteString(p.Message)
	return b.String()
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}
