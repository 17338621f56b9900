package settings

import (
	"fmt"
	"io"
	"log/slog"
)

// A Secret is a setting's value that must not be shown, such as a token. Its
// String, Format, LogValue and MarshalText print only whether it is set and
// its length, so a log line, an error, a printed [Config] or `codebridge
// config` cannot leak it; [Secret.Reveal] returns the value, for the code
// that hands it on.
type Secret string

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String is "" for an empty secret, else a placeholder.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("(set, %d characters)", len(s))
}

// Format prints the placeholder whatever the verb, %x and %d included.
func (s Secret) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// LogValue logs the placeholder.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText writes the placeholder.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
