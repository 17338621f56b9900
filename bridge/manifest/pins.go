package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/atomicfile"
	"github.com/codebridge-mcp/codebridge/bridge/dirlock"
)

// Pins are the tool definitions of one server as a person last accepted
// them: each tool's hash ([Hash]) with the definition itself, so that a
// changed one can be shown beside it. They are kept per server name, in the
// pins folder beside the manifests, and outlive a change of the server's
// definition and its removal from the configuration: what was vetted is what
// a server of that name is compared to, whatever starts it now.
type Pins struct {
	Server string         `json:"server"`
	Tools  map[string]Pin `json:"tools"`
	// Quarantined is the hash of each tool's definition last found
	// different from its pin, so each change is reported once.
	Quarantined map[string]string `json:"quarantined,omitempty"`
}

// Pin is one tool's accepted definition.
type Pin struct {
	Hash   string    `json:"hash"`
	Tool   *mcp.Tool `json:"tool"`
	Pinned time.Time `json:"pinned"`
}

// Definition is what of a tool is pinned: what a model reads and what
// decides how it is called.
type Definition struct {
	Name         string               `json:"name"`
	Description  string               `json:"description"`
	InputSchema  any                  `json:"inputSchema"`
	OutputSchema any                  `json:"outputSchema"`
	Annotations  *mcp.ToolAnnotations `json:"annotations"`
}

// DefinitionOf is t's pinned part.
func DefinitionOf(t *mcp.Tool) Definition {
	return Definition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations}
}

// Canonical is v as canonical JSON: objects' keys sorted at every level,
// no insignificant space, numbers as float64 prints them.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, err
	}
	return json.Marshal(generic) // encoding/json sorts map keys
}

// Hash is the SHA-256 of t's [Definition] as canonical JSON, in hex: the
// same for the same definition whatever the order of its schemas' keys.
func Hash(t *mcp.Tool) string {
	raw, err := Canonical(DefinitionOf(t))
	if err != nil { // a schema that does not encode: hash what there is
		raw = fmt.Appendf(nil, "%s\x00%s\x00%v", t.Name, t.Description, err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// State is where a listed tool stands against its server's pins.
type State int

const (
	Pinned   State = iota // as pinned
	Changed               // its definition differs from its pin: quarantined
	Unpinned              // no pin: a new server's or a new tool of a known one
	// Repeated: the listing names some tool more than once, so which
	// definition code would get is the server's choice; every tool of such
	// a listing is held, whatever its pin.
	Repeated
)

// Held reports whether a tool in state s is kept from code: changed,
// repeated, or new under quarantineNew.
func (s State) Held(quarantineNew bool) bool {
	return s == Changed || s == Repeated || s == Unpinned && quarantineNew
}

// Repeats returns the names that tools lists more than once, sorted.
func Repeats(tools []*mcp.Tool) []string {
	seen := make(map[string]int, len(tools))
	var out []string
	for _, t := range tools {
		if seen[t.Name]++; seen[t.Name] == 2 {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// pinsDir is the folder of pin files.
func (s *Store) pinsDir() string { return filepath.Join(s.dir, "pins") }

// pinsPath is the pin file of the server called name.
func (s *Store) pinsPath(name string) string {
	return filepath.Join(s.pinsDir(), filepath.Base(s.path(name)))
}

// LoadPins returns the pins of the server called name; ok is false when
// there are none (a server never listed, or listed before pinning). A file
// read once is kept until it changes on disk: where the pins folder can be
// watched (Linux, a local file system), until the watch reports a change in
// the folder, else until a stat of the file shows another file or size or
// time.
func (s *Store) LoadPins(name string) (p *Pins, ok bool, err error) {
	s.mu.Lock()
	if s.watch != nil {
		changed, alive := s.watch.changed()
		if changed {
			s.gen++
		}
		if !alive {
			s.watch = nil
		}
	}
	c, hit := s.pins[name]
	if hit && s.watch != nil && c.gen == s.gen {
		s.mu.Unlock()
		return c.pins, true, nil
	}
	watching := s.watch != nil
	gen := s.gen
	s.mu.Unlock()

	path := s.pinsPath(name)
	info, err := os.Stat(path)
	if err == nil && !watching && s.startWatch() {
		// Watched from now on; looked at again, so that a change since
		// the first look is not missed.
		s.mu.Lock()
		gen = s.gen
		s.mu.Unlock()
		info, err = os.Stat(path)
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	// A change the watch reported is read, whatever the stat says. Every
	// write renames a new file over the old: another file is a change even
	// within the file system's time granularity.
	if !hit || watching || !os.SameFile(c.info, info) || !c.info.ModTime().Equal(info.ModTime()) || c.info.Size() != info.Size() {
		if c.pins, err = readPins(path, name); err != nil {
			return nil, false, err
		}
	}
	s.mu.Lock()
	if s.pins == nil {
		s.pins = map[string]cachedPins{}
	}
	s.pins[name] = cachedPins{pins: c.pins, info: info, gen: gen}
	s.mu.Unlock()
	return c.pins, true, nil
}

// startWatch watches the pins folder, once it exists, unless a watch could
// not be made before; it reports whether one was started now.
func (s *Store) startWatch() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch != nil || s.noWatch {
		return false
	}
	s.watch = watchDir(s.pinsDir())
	s.noWatch = s.watch == nil
	return s.watch != nil
}

// cachedPins is a pin file as read, with what tells that it changed.
type cachedPins struct {
	pins *Pins
	info os.FileInfo
	gen  int // Store.gen when info was read
}

func readPins(path, name string) (*Pins, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Pins
	if err := json.Unmarshal(raw, &p); err != nil || p.Server != name {
		// Not ignored as a corrupt manifest is: without its pins a server
		// would be trusted afresh.
		return nil, fmt.Errorf("the pinned tool definitions of %s in %s are unreadable: remove the file to pin the server's tools afresh", name, path)
	}
	if p.Tools == nil {
		p.Tools = map[string]Pin{}
	}
	return &p, nil
}

// States says where each of tools stands against p, entry by entry: out[i]
// is the state of tools[i]. A listing that names a tool more than once has
// every entry Repeated; nil p (no pins) has every other tool Unpinned.
func (p *Pins) States(tools []*mcp.Tool) []State {
	out := make([]State, len(tools))
	if len(Repeats(tools)) > 0 {
		for i := range out {
			out[i] = Repeated
		}
		return out
	}
	for i, t := range tools {
		switch pin, ok := p.Lookup(t.Name); {
		case !ok:
			out[i] = Unpinned
		case pin.Hash != Hash(t):
			out[i] = Changed
		default:
			out[i] = Pinned
		}
	}
	return out
}

// Lookup returns tool's pin, if it has one; a nil p has none.
func (p *Pins) Lookup(tool string) (Pin, bool) {
	if p == nil {
		return Pin{}, false
	}
	pin, ok := p.Tools[tool]
	return pin, ok
}

// Quarantine is a tool held back by [Store.Check].
type Quarantine struct {
	Tool    string
	State   State    // Changed, Repeated, or Unpinned under quarantineNew
	Changed []string // for Changed, the parts that differ ([Differences])
	Times   int      // for Repeated, how many times the listing names the tool
}

// Differences names the parts of the definition that differ between was
// and now: description, inputSchema, outputSchema, annotations.
func Differences(was, now *mcp.Tool) []string {
	a, b := DefinitionOf(was), DefinitionOf(now)
	var out []string
	for _, part := range []struct {
		name string
		x, y any
	}{
		{"description", a.Description, b.Description},
		{"inputSchema", a.InputSchema, b.InputSchema},
		{"outputSchema", a.OutputSchema, b.OutputSchema},
		{"annotations", a.Annotations, b.Annotations},
	} {
		x, _ := Canonical(part.x)
		y, _ := Canonical(part.y)
		if string(x) != string(y) {
			out = append(out, part.name)
		}
	}
	return out
}

// Check compares a fresh listing of server's tools with its pins, under the
// pins' lock: tools without a pin are pinned now, unless quarantineNew holds
// them back until approved. It returns the tools newly quarantined, each
// change once: a definition found different again with the same hash is
// not returned again. A listing that names a tool more than once pins
// nothing: each repeated name is returned, as Repeated.
func (s *Store) Check(server string, tools []*mcp.Tool, quarantineNew bool) ([]Quarantine, error) {
	if repeats := Repeats(tools); len(repeats) > 0 {
		return s.checkRepeats(server, tools, repeats)
	}
	var out []Quarantine
	err := s.updatePins(server, func(p *Pins) bool {
		now := time.Now().UTC()
		dirty := false
		for _, t := range tools {
			h := Hash(t)
			pin, ok := p.Tools[t.Name]
			switch {
			case ok && pin.Hash == h:
				continue
			case !ok && !quarantineNew:
				p.Tools[t.Name] = Pin{Hash: h, Tool: t, Pinned: now}
				dirty = true
				continue
			}
			if p.Quarantined[t.Name] == h {
				continue // reported already
			}
			if p.Quarantined == nil {
				p.Quarantined = map[string]string{}
			}
			p.Quarantined[t.Name] = h
			dirty = true
			q := Quarantine{Tool: t.Name, State: Unpinned}
			if ok {
				q.State, q.Changed = Changed, Differences(pin.Tool, t)
			}
			out = append(out, q)
		}
		return dirty
	})
	return out, err
}

// checkRepeats records the repeated names of a listing as quarantined,
// each set of definitions once, and returns those not reported before.
func (s *Store) checkRepeats(server string, tools []*mcp.Tool, repeats []string) ([]Quarantine, error) {
	var out []Quarantine
	err := s.updatePins(server, func(p *Pins) bool {
		dirty := false
		for _, name := range repeats {
			sum := sha256.New()
			times := 0
			for _, t := range tools {
				if t.Name == name {
					times++
					sum.Write([]byte(Hash(t)))
				}
			}
			h := "repeated:" + hex.EncodeToString(sum.Sum(nil))
			if p.Quarantined[name] == h {
				continue // reported already
			}
			if p.Quarantined == nil {
				p.Quarantined = map[string]string{}
			}
			p.Quarantined[name] = h
			dirty = true
			out = append(out, Quarantine{Tool: name, State: Repeated, Times: times})
		}
		return dirty
	})
	return out, err
}

// ErrRepeated is the error of approving a listing that names a tool more
// than once.
var ErrRepeated = errors.New("the server lists a tool name more than once")

// Approve pins the definitions in tools, as a person accepted them. Tools
// that name one tool twice are refused with [ErrRepeated]: which of the two
// would be pinned is not the person's choice.
func (s *Store) Approve(server string, tools []*mcp.Tool) error {
	if repeats := Repeats(tools); len(repeats) > 0 {
		return fmt.Errorf("%w: %s lists %s more than once; nothing approved", ErrRepeated, server, strings.Join(repeats, ", "))
	}
	return s.updatePins(server, func(p *Pins) bool {
		now := time.Now().UTC()
		for _, t := range tools {
			p.Tools[t.Name] = Pin{Hash: Hash(t), Tool: t, Pinned: now}
			delete(p.Quarantined, t.Name)
		}
		return len(tools) > 0
	})
}

// updatePins reads server's pins under the pins folder's lock, lets edit
// change them, and writes them whole if it reports a change.
func (s *Store) updatePins(server string, edit func(*Pins) bool) error {
	dir := s.pinsDir()
	unlock, err := dirlock.Lock(dir)
	if err != nil {
		return fmt.Errorf("pinning the tools of %s: %w", server, err)
	}
	defer unlock()
	path := s.pinsPath(server)
	p, err := readPins(path, server)
	if errors.Is(err, os.ErrNotExist) {
		p, err = &Pins{Server: server, Tools: map[string]Pin{}}, nil
	}
	if err != nil {
		return err
	}
	if !edit(p) {
		return nil
	}
	raw, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return fmt.Errorf("encoding the pins of %s: %w", server, err)
	}
	return writeFile(path, raw)
}

// writeFile replaces path with raw, durably ([atomicfile.Replace]).
func writeFile(path string, raw []byte) error {
	return atomicfile.Replace(path, raw, 0o600)
}
