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
	"github.com/codebridge-mcp/codebridge/bridge/scan"
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
	// Flagged are the new or changed definitions the tool-poisoning
	// scanner held ([scan.Tool]), by tool name, until a person approves
	// them.
	Flagged map[string]Flag `json:"flagged,omitempty"`
	// Instructions, when the scanner held the server's instructions
	// ([scan.Instructions]), holds every tool of the server until a person
	// approves them; InstructionsApproved is the hash of the instructions
	// last approved, which are not scanned again.
	Instructions         *Flag  `json:"instructions,omitempty"`
	InstructionsApproved string `json:"instructionsApproved,omitempty"`
	// Denied are the held definitions a person refused, by tool name: the
	// tool stays quarantined as before, and review says it was denied,
	// until its definition changes again or a person approves it.
	Denied map[string]Denial `json:"denied,omitempty"`
}

// Denial is a held definition a person refused: its hash ([Hash]), and
// when.
type Denial struct {
	Hash   string    `json:"hash"`
	Denied time.Time `json:"denied"`
}

// Denial returns when t's current definition was denied, if it was; a nil
// p has no denials.
func (p *Pins) Denial(t *mcp.Tool) (time.Time, bool) {
	if p == nil {
		return time.Time{}, false
	}
	d, ok := p.Denied[t.Name]
	if !ok || d.Hash != Hash(t) {
		return time.Time{}, false
	}
	return d.Denied, true
}

// Flag is a definition the scanner held, with why.
type Flag struct {
	Hash     string         `json:"hash"` // of the tool ([Hash]) or of the instructions ([InstructionsHash])
	Findings []scan.Finding `json:"findings"`
	Found    time.Time      `json:"found"`
}

// InstructionsHash is the SHA-256 of a server's instructions, in hex.
func InstructionsHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
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
	// Flagged: new or changed, and the tool-poisoning scanner found its
	// definition, or the server's instructions, suspicious ([Pins.Flagged],
	// [Pins.Instructions]).
	Flagged
)

// Held reports whether a tool in state s is kept from code: changed,
// repeated, flagged, or new under quarantineNew.
func (s State) Held(quarantineNew bool) bool {
	return s == Changed || s == Repeated || s == Flagged || s == Unpinned && quarantineNew
}

// Flag returns why the scanner holds tool t, if it does: the server's
// instructions first (they hold every tool), then t's own definition as it
// is now.
func (p *Pins) Flag(t *mcp.Tool) (Flag, bool) {
	if p == nil {
		return Flag{}, false
	}
	if p.Instructions != nil {
		return *p.Instructions, true
	}
	f, ok := p.Flagged[t.Name]
	if !ok || f.Hash != Hash(t) {
		return Flag{}, false
	}
	return f, true
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
// every entry Repeated; held instructions make every other tool Flagged;
// nil p (no pins) has every other tool Unpinned.
func (p *Pins) States(tools []*mcp.Tool) []State {
	out := make([]State, len(tools))
	if len(Repeats(tools)) > 0 {
		for i := range out {
			out[i] = Repeated
		}
		return out
	}
	for i, t := range tools {
		if p != nil && p.Instructions != nil {
			out[i] = Flagged
			continue
		}
		switch pin, ok := p.Lookup(t.Name); {
		case ok && pin.Hash == Hash(t):
			out[i] = Pinned
		case p != nil && p.Flagged[t.Name].Hash == Hash(t):
			out[i] = Flagged
		case !ok:
			out[i] = Unpinned
		default:
			out[i] = Changed
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
	Tool    string   // "" for the server's instructions, which hold every tool
	State   State    // Changed, Repeated, Flagged, or Unpinned under quarantineNew
	Changed []string // for Changed, and Flagged with a pin, the parts that differ ([Differences])
	Times   int      // for Repeated, how many times the listing names the tool
	// Findings are, for Flagged, what the scanner found.
	Findings []scan.Finding
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

// CheckOptions are how [Store.Check] treats a listing.
type CheckOptions struct {
	// QuarantineNew holds tools without a pin until approved.
	QuarantineNew bool
	// Scan scans each new or changed definition, and Instructions, for
	// tool poisoning ([scan.Tool]) before it is pinned; false (a server
	// with "trust": "trusted") scans nothing and forgets what was flagged.
	Scan bool
	// Instructions are what the server's initialize result says of it.
	Instructions string
	// Others lists the tools of the other servers, for shadowing (a name
	// the listing's own tools have too is not); called only when there is
	// something to scan. Nil knows none.
	Others func() []scan.Name
}

// Check compares a fresh listing of server's tools with its pins, under the
// pins' lock. Under opts.Scan each new or changed definition is scanned
// first, and the server's instructions when they changed: a finding holds
// the tool (Flagged), and one in the instructions holds every tool, until
// approved. Other tools without a pin are pinned now, unless
// opts.QuarantineNew holds them back until approved. It returns the tools
// newly quarantined, each change once: a definition found different again
// with the same hash is not returned again; held instructions are returned
// once as a Quarantine with no Tool. A listing that names a tool more than
// once pins nothing: each repeated name is returned, as Repeated.
func (s *Store) Check(server string, tools []*mcp.Tool, opts CheckOptions) ([]Quarantine, error) {
	if repeats := Repeats(tools); len(repeats) > 0 {
		return s.checkRepeats(server, tools, repeats)
	}
	// The names the scanner knows: the listing's own (a mention of one
	// is the server's own business) and the other servers'.
	var names []scan.Name
	namesRead := false
	other := func() []scan.Name {
		if !namesRead {
			for _, t := range tools {
				names = append(names, scan.Name{Server: server, Tool: t.Name})
			}
			if opts.Others != nil {
				names = append(names, opts.Others()...)
			}
			namesRead = true
		}
		return names
	}
	var out []Quarantine
	err := s.updatePins(server, func(p *Pins) bool {
		now := time.Now().UTC()
		dirty := false
		if !opts.Scan {
			dirty = p.Flagged != nil || p.Instructions != nil
			p.Flagged, p.Instructions = nil, nil
		} else if q, changed := p.checkInstructions(server, opts.Instructions, other, now); changed {
			dirty = true
			if q != nil {
				out = append(out, *q)
			}
		}
		for _, t := range tools {
			h := Hash(t)
			pin, ok := p.Tools[t.Name]
			if ok && pin.Hash == h {
				continue
			}
			var findings []scan.Finding
			if opts.Scan {
				if f, seen := p.Flagged[t.Name]; seen && f.Hash == h {
					findings = f.Findings
				} else if findings = scan.Tool(server, t, other()...); len(findings) > 0 {
					if p.Flagged == nil {
						p.Flagged = map[string]Flag{}
					}
					p.Flagged[t.Name] = Flag{Hash: h, Findings: findings, Found: now}
					dirty = true
				}
			}
			if !ok && !opts.QuarantineNew && len(findings) == 0 && p.Instructions == nil {
				p.Tools[t.Name] = Pin{Hash: h, Tool: t, Pinned: now}
				delete(p.Flagged, t.Name)
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
			switch {
			case len(findings) > 0:
				q.State, q.Findings = Flagged, findings
			case p.Instructions != nil:
				q.State, q.Findings = Flagged, p.Instructions.Findings
			}
			out = append(out, q)
		}
		return dirty
	})
	return out, err
}

// checkInstructions scans the server's instructions when they differ from
// those last scanned or approved, and records a finding in p.Instructions.
// It reports whether p changed, and the quarantine to report when the
// instructions are newly held.
func (p *Pins) checkInstructions(server, text string, others func() []scan.Name, now time.Time) (*Quarantine, bool) {
	h := InstructionsHash(text)
	switch {
	case text == "" || h == p.InstructionsApproved:
		changed := p.Instructions != nil
		p.Instructions = nil
		return nil, changed
	case p.Instructions != nil && p.Instructions.Hash == h:
		return nil, false
	}
	findings := scan.Instructions(server, text, others()...)
	if len(findings) == 0 {
		changed := p.Instructions != nil
		p.Instructions = nil
		return nil, changed
	}
	p.Instructions = &Flag{Hash: h, Findings: findings, Found: now}
	return &Quarantine{State: Flagged, Findings: findings}, true
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

// Approve pins the definitions in tools, as a person accepted them, and
// the server's held instructions with them. Tools that name one tool twice
// are refused with [ErrRepeated]: which of the two would be pinned is not
// the person's choice.
func (s *Store) Approve(server string, tools []*mcp.Tool) error {
	if repeats := Repeats(tools); len(repeats) > 0 {
		return fmt.Errorf("%w: %s lists %s more than once; nothing approved", ErrRepeated, server, strings.Join(repeats, ", "))
	}
	return s.updatePins(server, func(p *Pins) bool {
		now := time.Now().UTC()
		for _, t := range tools {
			p.Tools[t.Name] = Pin{Hash: Hash(t), Tool: t, Pinned: now}
			delete(p.Quarantined, t.Name)
			delete(p.Flagged, t.Name)
			delete(p.Denied, t.Name)
		}
		if p.Instructions != nil && len(tools) > 0 {
			p.InstructionsApproved, p.Instructions = p.Instructions.Hash, nil
		}
		return len(tools) > 0
	})
}

// Deny records that a person refused the definitions in tools: they stay
// held, and [Pins.Denial] says so until they change again.
func (s *Store) Deny(server string, tools []*mcp.Tool) error {
	return s.updatePins(server, func(p *Pins) bool {
		if p.Denied == nil {
			p.Denied = map[string]Denial{}
		}
		now := time.Now().UTC()
		for _, t := range tools {
			p.Denied[t.Name] = Denial{Hash: Hash(t), Denied: now}
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
