package settings

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/v2"
)

// FileEnv names the settings file in place of the default,
// os.UserConfigDir()/codebridge/config.toml.
const FileEnv = EnvPrefix + "SETTINGS_FILE"

// A Layer is where a setting's value came from. Each layer wins over the
// ones before it.
type Layer int

// The layers, lowest first.
const (
	LayerDefault Layer = iota // the settings table
	LayerFile                 // the settings file
	LayerEnv                  // an MCP_BRIDGE_* environment variable
	LayerFlag                 // a command-line flag
)

var layerNames = [...]string{"default", "file", "env", "flag"}

func (l Layer) String() string { return layerNames[l] }

// MarshalText writes the layer's name, e.g. "env".
func (l Layer) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a layer's name, as MarshalText writes it.
func (l *Layer) UnmarshalText(b []byte) error {
	i := slices.Index(layerNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("unknown layer %q: want default, file, env or flag", b)
	}
	*l = Layer(i)
	return nil
}

// An Origin is where one setting's value came from: its layer, and the file's
// path, the variable's name or the flag's (empty for a default).
type Origin struct {
	Layer Layer  `json:"layer"`
	Name  string `json:"name,omitempty"`
}

func (o Origin) String() string { return cmp.Or(o.Name, o.Layer.String()) }

// A Value is one resolved setting, as `codebridge config` shows it.
type Value struct {
	Key    string `json:"key"`   // its key in the settings file
	Env    string `json:"env"`   // its environment variable
	Text   string `json:"value"` // its value as given; a secret's is redacted
	Origin Origin `json:"origin"`
}

// Sources are the layers [Load] reads besides the defaults. The settings file
// is named by [FileEnv] in Environ, else it is
// os.UserConfigDir()/codebridge/config.toml.
type Sources struct {
	Environ []string          // the environment, in os.Environ form
	Flags   map[string]string // command-line flags that were set, by name (e.g. "http"); others are ignored
	Logger  *slog.Logger      // warns of unknown MCP_BRIDGE_* variables; nil discards
}

// Resolved is the outcome of [Load]: the Config, and where each value came
// from. It is a snapshot: nothing changes it after Load returns it.
type Resolved struct {
	Config    Config
	File      string  // the settings file read, or looked for
	FileFound bool    // whether File existed
	Values    []Value // every setting, in the table's order
}

// Origin is where the setting with that key (e.g. "log_level") came from.
func (r *Resolved) Origin(key string) Origin {
	for _, v := range r.Values {
		if v.Key == key {
			return v.Origin
		}
	}
	return Origin{}
}

// ignored are the reference bridge's variables that have no meaning here; they are
// accepted so an existing config keeps working.
var ignored = map[string]bool{"runtime": true, "runtime_idle_timeout": true, "output_mode": true}

// LoadConfig resolves the settings from their layers (see [Load]), with
// environ as the environment.
func LoadConfig(environ []string, logger *slog.Logger) (Config, error) {
	r, err := Load(Sources{Environ: environ, Logger: logger})
	if err != nil {
		return Config{}, err
	}
	return r.Config, nil
}

// Defaults is the Config of the settings table's defaults alone, with no file
// and no environment: what tests start from.
func Defaults() Config {
	c, err := resolve(defaultsLayer(), map[string]Origin{})
	if err != nil {
		panic("settings: a default is invalid: " + err.Error())
	}
	return c.Config
}

// Load resolves the settings from their layers, each winning over the ones
// before: the defaults of the settings table, the settings file, the
// MCP_BRIDGE_* environment variables, then the command-line flags. An invalid
// value is an error naming its layer and key. A missing settings file is no
// error, unless [FileEnv] names it; an unreadable or malformed one is, naming
// the file (and the line, for a syntax error).
func Load(src Sources) (*Resolved, error) {
	logger := src.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	k := koanf.New(".")
	origins := map[string]Origin{}
	merge := func(layer *koanf.Koanf, origin func(key string) Origin) {
		for _, key := range layer.Keys() {
			origins[key] = origin(key)
		}
		k.Merge(layer) // not strict: cannot fail
	}
	k.Merge(defaultsLayer())

	path, named := settingsFile(src.Environ)
	fileLayer, found, err := readFile(path, named)
	if err != nil {
		return nil, err
	}
	merge(fileLayer, func(string) Origin { return Origin{LayerFile, path} })

	envLayer, unknown, err := readEnv(src.Environ)
	if err != nil {
		return nil, err
	}
	for _, name := range unknown {
		logger.Warn("ignoring unknown setting; see docs/settings.md or 'codebridge config'", "variable", name)
	}
	merge(envLayer, func(key string) Origin { return Origin{LayerEnv, envName(key)} })

	flags := map[string]any{}
	for _, s := range settings {
		if v, ok := src.Flags[s.flag]; ok && s.flag != "" {
			flags[s.key] = strings.TrimSpace(v)
		}
	}
	flagLayer := koanf.New(".")
	if err := flagLayer.Load(confmap.Provider(flags, "."), nil); err != nil {
		return nil, fmt.Errorf("reading the command-line flags: %w", err)
	}
	merge(flagLayer, func(key string) Origin { return Origin{LayerFlag, "--" + settingOf(key).flag} })

	r, err := resolve(k, origins)
	if err != nil {
		return nil, err
	}
	r.File, r.FileFound = path, found
	return r, nil
}

// resolve decodes the merged values of k into a Config, naming a bad
// value's origin: koanf decodes each setting's text into its field, through
// the setting's parse function. A setting left empty whose value depends on
// the machine or on other settings (its unset function) is worked out after
// every other one is set.
func resolve(k *koanf.Koanf, origins map[string]Origin) (*Resolved, error) {
	r := &Resolved{Values: make([]Value, len(settings))}
	decode := func(i int) error {
		s := settings[i]
		v, o := k.String(s.key), origins[s.key]
		err := k.UnmarshalWithConf(s.key, fieldOf(&r.Config, s).Addr().Interface(), koanf.UnmarshalConf{
			DecoderConfig: &mapstructure.DecoderConfig{DecodeHook: s.hook()},
		})
		if err != nil {
			var derr *mapstructure.DecodeError
			if errors.As(err, &derr) {
				err = derr.Unwrap() // the parse function's words alone
			}
			return fmt.Errorf("%s: %v", where(s, o, v), err)
		}
		text := v
		if s.secret {
			text = redact(v)
		}
		r.Values[i] = Value{Key: s.key, Env: envName(s.key), Text: text, Origin: o}
		return nil
	}
	var later []int
	for i, s := range settings {
		if k.String(s.key) == "" && s.unset != nil {
			later = append(later, i)
			continue
		}
		if err := decode(i); err != nil {
			return nil, err
		}
	}
	r.Config.derived = map[string]bool{}
	for _, i := range later {
		_ = k.Set(settings[i].key, settings[i].unset(r.Config)) // a string: cannot fail
		if err := decode(i); err != nil {
			return nil, err
		}
		r.Config.derived[settings[i].key] = true
	}
	if c := r.Config; c.Timeout > c.MaxTimeout {
		return nil, fmt.Errorf("timeout %s (%s) is larger than max_timeout %s (%s): raise the maximum or lower the default",
			c.Timeout, origins["timeout"], c.MaxTimeout, origins["max_timeout"])
	}
	return r, nil
}

// hook is the decode hook of s's field: its parse function, given the text
// of the field's value (and not of an element of it, which the decoder
// passes through the hook too).
func (s setting) hook() mapstructure.DecodeHookFuncType {
	field := fieldOf(&Config{}, s).Type()
	return func(_, to reflect.Type, data any) (any, error) {
		v, ok := data.(string)
		if !ok || s.parse == nil || to != field {
			return data, nil
		}
		return s.parse(v)
	}
}

// fieldOf is the field of c that s sets: the one tagged with its key, or
// the one its field names.
func fieldOf(c *Config, s setting) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	if s.field != "" {
		for _, name := range strings.Split(s.field, ".") {
			v = v.FieldByName(name)
		}
		return v
	}
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("koanf") == s.key {
			return v.Field(i)
		}
	}
	panic("settings: no Config field is tagged koanf:\"" + s.key + "\"")
}

// where names a value for an error: the variable, the file and key, or the
// flag it was given by.
func where(s setting, o Origin, v string) string {
	shown := strconv.Quote(v)
	if s.secret {
		shown = redact(v)
	}
	switch o.Layer {
	case LayerFile:
		return fmt.Sprintf("%s: invalid %s = %s", o.Name, s.key, shown)
	case LayerEnv:
		return fmt.Sprintf("invalid %s=%s", o.Name, shown)
	case LayerFlag:
		return fmt.Sprintf("invalid %s %s", o.Name, shown)
	}
	return fmt.Sprintf("invalid default %s = %s", s.key, shown)
}

// redact stands for a secret's value: whether it is set, never what it is.
// redact shows a secret setting's value as whether it is set and its length.
func redact(v string) string {
	if v == "" {
		return ""
	}
	return fmt.Sprintf("(set, %d characters)", len(v))
}

func envName(key string) string { return EnvPrefix + strings.ToUpper(key) }

// settingOf is the row of the settings table with that key.
func settingOf(key string) setting {
	i := slices.IndexFunc(settings, func(s setting) bool { return s.key == key })
	return settings[i]
}

func known(key string) bool {
	return slices.ContainsFunc(settings, func(s setting) bool { return s.key == key })
}

// defaultsLayer is the settings table's defaults.
func defaultsLayer() *koanf.Koanf {
	m := make(map[string]any, len(settings))
	for _, s := range settings {
		m[s.key] = s.def
	}
	k := koanf.New(".")
	_ = k.Load(confmap.Provider(m, "."), nil) // a map in memory: cannot fail
	return k
}

// settingsFile is the path of the settings file, and whether [FileEnv] named it.
func settingsFile(environ []string) (path string, named bool) {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, FileEnv+"="); ok && v != "" {
			return v, true
		}
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", false // no home folder: no settings file
	}
	return filepath.Join(dir, "codebridge", "config.toml"), false
}

// readFile reads the settings file at path into a layer of text values, as
// the environment gives them. found is false when there is none; that is an
// error only when the user named it. The file is TOML, read with
// BurntSushi/toml (which the module graph holds already, through Podman)
// into the map that koanf's confmap provider loads.
func readFile(path string, named bool) (layer *koanf.Koanf, found bool, err error) {
	layer = koanf.New(".")
	if path == "" {
		return layer, false, nil
	}
	var doc map[string]any
	data, err := os.ReadFile(path)
	if err == nil {
		_, err = toml.Decode(string(data), &doc)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !named {
			return layer, false, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("settings file %s (%s) does not exist: create it, or unset %s", path, FileEnv, FileEnv)
		}
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, false, fmt.Errorf("settings file %s: line %d: %s: fix the file (TOML, see docs/settings.md)", path, perr.Position.Line, perr.Message)
		}
		return nil, false, fmt.Errorf("reading settings file %s: %w", path, err)
	}
	raw := koanf.New(".")
	_ = raw.Load(confmap.Provider(doc, "."), nil) // a map in memory: cannot fail
	texts := map[string]any{}
	for _, key := range raw.Keys() { // sorted, flattened: a [table]'s keys are "table.key"
		if !known(key) {
			return nil, false, fmt.Errorf("%s: unknown key %q: remove it, or see docs/settings.md for the keys there are", path, key)
		}
		v, err := fileText(raw.Get(key))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %s: %v", path, key, err)
		}
		texts[key] = strings.TrimSpace(v)
	}
	_ = layer.Load(confmap.Provider(texts, "."), nil) // a map in memory: cannot fail
	return layer, true, nil
}

// fileText is a TOML value as the text the settings' parsers read: numbers
// and booleans as written, lists joined with commas.
func fileText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			t, err := fileText(e)
			if _, list := e.([]any); err != nil || list {
				return "", errors.New("want a list of strings or numbers, e.g. [\"a\", \"b\"]")
			}
			parts[i] = t
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("want a string, number, boolean or list, not %T", v)
}

// readEnv reads the MCP_BRIDGE_* variables of environ into a layer; unknown
// are the names of those that are no setting, sorted.
func readEnv(environ []string) (layer *koanf.Koanf, unknown []string, err error) {
	layer = koanf.New(".")
	err = layer.Load(env.Provider(".", env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, v string) (string, any) {
			key := strings.ToLower(strings.TrimPrefix(name, EnvPrefix))
			switch {
			case known(key):
				return key, strings.TrimSpace(v)
			case name != FileEnv && !ignored[key]:
				unknown = append(unknown, name)
			}
			return "", nil
		},
	}), nil)
	slices.Sort(unknown)
	return layer, unknown, err
}

func defaultConfigDir() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, "MCPs")
}

func defaultStateDir() string {
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, _ := os.UserHomeDir()
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "codebridge")
}
