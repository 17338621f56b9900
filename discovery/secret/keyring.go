package secret

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zalando/go-keyring"
)

// Errors of the keyring functions, for [errors.Is].
var (
	// ErrNotFound: the keyring holds no secret under that name.
	ErrNotFound = errors.New("no such secret in the OS keyring")
	// ErrNoKeyring: there is no OS keyring to ask (on Linux: no D-Bus
	// session, or no Secret Service such as gnome-keyring on it, or its
	// collection is locked).
	ErrNoKeyring = errors.New("no OS keyring is available")
)

// A Ref names a secret in the OS keyring: SERVICE/ACCOUNT.
type Ref struct {
	Service, Account string
}

// ParseRef parses SERVICE/ACCOUNT; the service ends at the first slash, so an
// account may hold more.
func ParseRef(s string) (Ref, error) {
	service, account, ok := strings.Cut(s, "/")
	if !ok || strings.TrimSpace(service) == "" || strings.TrimSpace(account) == "" {
		return Ref{}, fmt.Errorf("%q is not SERVICE/ACCOUNT: name the keyring entry by its service and account, e.g. github/token", s)
	}
	return Ref{Service: service, Account: account}, nil
}

func (r Ref) String() string { return r.Service + "/" + r.Account }

// Get reads the secret r from the OS keyring.
func Get(r Ref) (Value, error) {
	s, err := keyring.Get(r.Service, r.Account)
	if err != nil {
		return Value{}, keyringError(r, err)
	}
	return New(s), nil
}

// Set stores v as the secret r in the OS keyring, replacing any.
func Set(r Ref, v Value) error {
	return keyringError(r, keyring.Set(r.Service, r.Account, v.Reveal()))
}

// Delete removes the secret r from the OS keyring.
func Delete(r Ref) error {
	return keyringError(r, keyring.Delete(r.Service, r.Account))
}

// keyringError words an error of the keyring library. Any error but "not
// found" means there is no keyring to use: go-keyring's errors then name
// D-Bus, the Secret Service or the platform's API, never the secret.
func keyringError(r Ref, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, keyring.ErrNotFound):
		return fmt.Errorf("%s: %w", r, ErrNotFound)
	case errors.Is(err, keyring.ErrSetDataTooBig):
		return fmt.Errorf("%s: the secret is too big for the OS keyring", r)
	}
	return fmt.Errorf("%s: %w (%v)", r, ErrNoKeyring, err)
}
