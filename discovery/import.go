package discovery

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// An ImportPlan is what importing agents' servers into a config folder
// would do: the files to write, the servers left out and why, and the agent
// files that could not be read.
type ImportPlan struct {
	Files    []ImportFile
	Skipped  []SkippedServer
	Problems []Problem
}

// An ImportFile is one file of the config folder, holding one agent's
// servers.
type ImportFile struct {
	Agent, Label string
	Path         string // in the config folder: AGENT.json
	Exists       bool   // a file of that name is already there
	Servers      []AgentServer
}

// A SkippedServer is a server found in an agent's file and not imported.
type SkippedServer struct {
	AgentServer
	Reason string
}

// PlanImport finds the servers of every agent file (see [AgentFiles]) and
// plans their import into configDir: each agent's servers go to
// configDir/AGENT.json, except codebridge itself, servers configDir already
// has (by name, or reaching the same command or URL), servers an earlier
// agent file already gave, definitions codebridge cannot use, and, unless
// allowCommands, entries of a project's own file ([AgentFile.Project]) that
// hold a ${cmd:...} reference, which codebridge would run on every load
// (each skipped with its reason). It writes nothing.
func PlanImport(places AgentPlaces, configDir string, opts Options, allowCommands bool) ImportPlan {
	var plan ImportPlan
	// What the folder has, whichever variables are set now.
	opts.LookupEnv = func(string) (string, bool) { return "set", true }
	opts.LeaveSecrets = true // and without asking the keyring or running commands
	existing := Load(configDir, nil, opts)
	taken := map[string]string{} // name → where it comes from
	var endpoints []*Server
	for _, s := range existing.Servers {
		taken[s.Name] = s.Source
		endpoints = append(endpoints, s)
	}
	for _, p := range existing.Problems { // a broken entry still holds its name
		if p.Server != "" && taken[p.Server] == "" {
			taken[p.Server] = p.Path
		}
	}
	byAgent := map[string]*ImportFile{}
	var order []string
	for _, f := range AgentFiles(places) {
		found, err := ReadAgentFile(f, places.Cwd)
		if err != nil {
			plan.Problems = append(plan.Problems, Problem{Path: f.Path, Message: fmt.Sprintf("%s: %v; skipped", f.Label, err)})
			continue
		}
		for _, as := range found {
			srv, reason := checkEntry(as, opts)
			switch {
			case reason != "":
			case f.Project && !allowCommands && slices.ContainsFunc(References(as.Entry), isCommand):
				reason = fmt.Sprintf("it runs a command (${cmd:...}) and comes from this project's %s, which whoever wrote the project chose: "+
					"read it, then pass --allow-commands to import it", filepath.Base(f.Path))
			case taken[as.Name] != "":
				reason = "a server of that name is already in " + taken[as.Name]
			default:
				for _, e := range endpoints {
					renamed := *srv
					renamed.Name = e.Name
					if renamed.SameEndpoint(e) {
						reason = fmt.Sprintf("the same server as %q in %s", e.Name, e.Source)
						break
					}
				}
			}
			if reason != "" {
				plan.Skipped = append(plan.Skipped, SkippedServer{as, reason})
				continue
			}
			taken[as.Name] = fmt.Sprintf("%s (%s)", f.Path, f.Label)
			srv.Name, srv.Source = as.Name, f.Path
			endpoints = append(endpoints, srv)
			out := byAgent[f.Agent]
			if out == nil {
				path := filepath.Join(configDir, f.Agent+".json")
				_, statErr := os.Stat(path)
				out = &ImportFile{Agent: f.Agent, Label: f.Label, Path: path, Exists: statErr == nil}
				byAgent[f.Agent] = out
				order = append(order, f.Agent)
			}
			out.Servers = append(out.Servers, as)
		}
	}
	for _, a := range order {
		plan.Files = append(plan.Files, *byAgent[a])
	}
	return plan
}

// checkEntry loads one entry as codebridge would (with opts, where every
// ${VAR} is taken as set: the variables are read when codebridge runs, not
// now), and says why it cannot be imported, if it cannot.
func checkEntry(as AgentServer, opts Options) (*Server, string) {
	dir, err := os.MkdirTemp("", "codebridge-import-")
	if err != nil {
		return nil, err.Error()
	}
	defer os.RemoveAll(dir)
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{as.Name: as.Entry}})
	if err := os.WriteFile(filepath.Join(dir, "entry.json"), data, 0o600); err != nil {
		return nil, err.Error()
	}
	opts.AllowSelf = true // to name it below
	cfg := Load(dir, nil, opts)
	for _, p := range cfg.Problems {
		if !p.Warning {
			return nil, p.Message
		}
	}
	for _, s := range cfg.Servers {
		if s.Name != as.Name {
			continue
		}
		if s.Transport == Stdio && isSelf(s) {
			return nil, "codebridge itself"
		}
		return s, ""
	}
	return nil, "codebridge cannot use this definition"
}

// References lists every ${...} reference in entry's strings (its url,
// command, args, env, headers and any other field), in the order of its
// sorted keys, each once: what the imported entry reads or runs when
// codebridge loads it.
func References(entry map[string]any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			for rest := v; ; {
				i := strings.Index(rest, "${")
				if i < 0 {
					break
				}
				rest = rest[i:]
				j := strings.IndexByte(rest, '}')
				if j < 0 {
					j = len(rest) - 1 // unclosed: all of it
				}
				if ref := rest[:j+1]; !slices.Contains(out, ref) {
					out = append(out, ref)
				}
				rest = rest[j+1:]
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, k := range sortedKeys(v) {
				walk(v[k])
			}
		}
	}
	walk(entry)
	return out
}

// isCommand reports whether ref is a ${cmd:...} reference.
func isCommand(ref string) bool { return strings.HasPrefix(ref, "${cmd:") }

// Content is the file's text: {"mcpServers": {...}}, indented.
func (f ImportFile) Content() []byte {
	servers := map[string]any{}
	for _, s := range f.Servers {
		servers[s.Name] = s.Entry
	}
	data, _ := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	return append(data, '\n')
}
