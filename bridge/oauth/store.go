package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/codebridge-mcp/codebridge/bridge/atomicfile"
	"github.com/codebridge-mcp/codebridge/bridge/dirlock"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// KeyringService is the service under which sign-ins are kept in the OS
// keyring; the account is the server's name and URL.
const KeyringService = "codebridge-oauth"

// Dir is the folder under stateDir that holds sign-ins when there is no OS
// keyring, one 0600 file per server.
func Dir(stateDir string) string { return filepath.Join(stateDir, "oauth") }

// A Record is one server's sign-in: the authorization server it was made
// with, the client codebridge signed in as, and the tokens. The client secret
// and the tokens are [secret.Value]s, so a Record printed or logged shows none
// of them.
type Record struct {
	Server       string // the server's name in ~/MCPs
	Resource     string // the server's URL: the tokens are sent only there
	Issuer       string // the authorization server
	AuthURL      string // its authorization endpoint
	TokenURL     string // its token endpoint
	ClientID     string // the client codebridge signed in as
	ClientSecret secret.Value
	TokenAuth    string // how it authenticates at TokenURL: client_secret_post, client_secret_basic or none
	Registered   bool   // codebridge registered ClientID itself (RFC 7591)
	RedirectURI  string // the redirect URI ClientID was registered with
	Scopes       []string
	Subject      string // who signed in, when the authorization server said
	AccessToken  secret.Value
	RefreshToken secret.Value
	TokenType    string
	Expiry       time.Time // of the access token; zero when it does not expire
	SignedIn     time.Time
}

// SignedInNow reports whether r holds tokens.
func (r *Record) SignedInNow() bool {
	return r != nil && (r.AccessToken.Reveal() != "" || r.RefreshToken.Reveal() != "")
}

// token is r's tokens as golang.org/x/oauth2 takes them.
func (r *Record) token() *oauth2.Token {
	return &oauth2.Token{
		AccessToken:  r.AccessToken.Reveal(),
		RefreshToken: r.RefreshToken.Reveal(),
		TokenType:    r.TokenType,
		Expiry:       r.Expiry,
	}
}

// setToken stores t in r, keeping the refresh token when t has none (a
// refresh need not return a new one).
func (r *Record) setToken(t *oauth2.Token) {
	r.AccessToken = secret.New(t.AccessToken)
	if t.RefreshToken != "" {
		r.RefreshToken = secret.New(t.RefreshToken)
	}
	r.TokenType = t.TokenType
	r.Expiry = t.Expiry
}

// authStyle is how r's client authenticates at the token endpoint.
func (r *Record) authStyle() oauth2.AuthStyle {
	switch r.TokenAuth {
	case "client_secret_basic":
		return oauth2.AuthStyleInHeader
	case "client_secret_post", "none":
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}

// forgetTokens drops r's tokens, keeping its client for the next sign-in.
func (r *Record) forgetTokens() {
	r.AccessToken, r.RefreshToken, r.Expiry = secret.Value{}, secret.Value{}, time.Time{}
}

// stored is a Record as it is written: the only place its secrets are
// revealed.
type stored struct {
	Version      int       `json:"version"`
	Server       string    `json:"server"`
	Resource     string    `json:"resource"`
	Issuer       string    `json:"issuer"`
	AuthURL      string    `json:"authorization_endpoint,omitempty"`
	TokenURL     string    `json:"token_endpoint"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	TokenAuth    string    `json:"token_endpoint_auth_method,omitempty"`
	Registered   bool      `json:"registered,omitempty"`
	RedirectURI  string    `json:"redirect_uri,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	Subject      string    `json:"subject,omitempty"`
	AccessToken  string    `json:"access_token,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	SignedIn     time.Time `json:"signed_in,omitzero"`
}

func encode(r *Record) []byte {
	data, _ := json.Marshal(stored{ // nothing in it can fail to encode
		Version: 1, Server: r.Server, Resource: r.Resource, Issuer: r.Issuer, AuthURL: r.AuthURL, TokenURL: r.TokenURL,
		ClientID: r.ClientID, ClientSecret: r.ClientSecret.Reveal(), TokenAuth: r.TokenAuth, Registered: r.Registered, RedirectURI: r.RedirectURI,
		Scopes: r.Scopes, Subject: r.Subject, AccessToken: r.AccessToken.Reveal(), RefreshToken: r.RefreshToken.Reveal(),
		TokenType: r.TokenType, Expiry: r.Expiry, SignedIn: r.SignedIn,
	})
	return data
}

func decode(data []byte) (*Record, error) {
	var s stored
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, errors.New("the stored sign-in is not valid JSON") // the error could quote a token
	}
	return &Record{
		Server: s.Server, Resource: s.Resource, Issuer: s.Issuer, AuthURL: s.AuthURL, TokenURL: s.TokenURL,
		ClientID: s.ClientID, ClientSecret: secret.New(s.ClientSecret), TokenAuth: s.TokenAuth, Registered: s.Registered, RedirectURI: s.RedirectURI,
		Scopes: s.Scopes, Subject: s.Subject, AccessToken: secret.New(s.AccessToken), RefreshToken: secret.New(s.RefreshToken),
		TokenType: s.TokenType, Expiry: s.Expiry, SignedIn: s.SignedIn,
	}, nil
}

// A Keyring keeps secrets by [secret.Ref]; [secret.Get], [secret.Set] and
// [secret.Delete] are the OS keyring's. Its errors match
// [secret.ErrNotFound] for a missing entry; any other error means there is no
// keyring to use.
type Keyring interface {
	Get(secret.Ref) (secret.Value, error)
	Set(secret.Ref, secret.Value) error
	Delete(secret.Ref) error
}

type osKeyring struct{}

func (osKeyring) Get(r secret.Ref) (secret.Value, error) { return secret.Get(r) }
func (osKeyring) Set(r secret.Ref, v secret.Value) error { return secret.Set(r, v) }
func (osKeyring) Delete(r secret.Ref) error              { return secret.Delete(r) }

// Where a sign-in is kept.
const (
	InKeyring = "the OS keyring"
	InFile    = "a 0600 file" // under [Dir]
)

// A Store keeps sign-ins per server (its name and URL): in the OS keyring when
// there is one, else in a 0600 file under [Dir], never in the config folder.
type Store struct {
	dir     string
	keyring Keyring

	mu sync.Mutex // serialises this process's writers; dirlock the others
}

// NewStore returns the store of the state directory stateDir, using the OS
// keyring.
func NewStore(stateDir string) *Store { return NewStoreWith(stateDir, osKeyring{}) }

// NewStoreWith is [NewStore] with the keyring given (a fake in tests).
func NewStoreWith(stateDir string, kr Keyring) *Store {
	return &Store{dir: Dir(stateDir), keyring: kr}
}

// ref is the keyring entry of server at url.
func ref(server, url string) secret.Ref {
	return secret.Ref{Service: KeyringService, Account: server + " " + url}
}

// file is the fallback file of server at url: its name, then a hash of both
// (a name may hold any character; the URL tells a changed server apart).
func (s *Store) file(server, url string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + url))
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, server)
	return filepath.Join(s.dir, safe+"-"+hex.EncodeToString(sum[:6])+".json")
}

// Load returns the sign-in of server at url, nil when there is none.
func (s *Store) Load(server, url string) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.keyring.Get(ref(server, url))
	if err == nil {
		rec, err := decode([]byte(v.Reveal()))
		if err != nil {
			return nil, s.setAside(server, url, "in the OS keyring", []byte(v.Reveal()))
		}
		return rec, nil
	}
	// Not in the keyring (or no keyring): a file written when there was none.
	path := s.file(server, url)
	data, ferr := os.ReadFile(path)
	switch {
	case ferr == nil:
		rec, err := decode(data)
		if err != nil {
			return nil, s.setAside(server, url, "in "+path, nil)
		}
		return rec, nil
	case errors.Is(ferr, os.ErrNotExist):
		return nil, nil
	default:
		return nil, fmt.Errorf("reading the sign-in of %s: %w", server, ferr)
	}
}

// setAside moves the undecodable sign-in of server at url (where says
// where it was) out of the way, to a file NAME.corrupt-TIME beside the
// sign-in file, so that the next Load finds none and login works again;
// data is the keyring entry's (nil: the file is renamed). Its error says
// what happened and what to do.
func (s *Store) setAside(server, url, where string, data []byte) error {
	path := s.file(server, url)
	aside := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	var err error
	if data == nil {
		err = os.Rename(path, aside)
	} else if err = os.MkdirAll(s.dir, 0o700); err == nil {
		if err = os.WriteFile(aside, data, 0o600); err == nil {
			err = s.keyring.Delete(ref(server, url))
		}
	}
	if err != nil {
		return fmt.Errorf("the sign-in of %s stored %s cannot be read (not valid JSON), and moving it aside to %s failed: %w; run `codebridge logout %s`, then `codebridge login %s`", server, where, aside, err, server, server)
	}
	return &setAsideError{fmt.Sprintf("the sign-in of %s stored %s could not be read (not valid JSON, perhaps cut short by a crash): it was moved aside to %s; run `codebridge login %s` to sign in again", server, where, aside, server)}
}

// A setAsideError says an undecodable sign-in was moved aside: the store
// now holds none.
type setAsideError struct{ msg string }

func (e *setAsideError) Error() string { return e.msg }

// Save stores r, replacing what was stored for its server and URL, and says
// where it went: the keyring, else the file.
func (s *Store) Save(r *Record) (where string, err error) {
	err = s.locked(context.Background(), func() error { where, err = s.save(r); return err })
	return where, err
}

// locked runs fn under the lock of the store's folder, which serialises
// the writers of every codebridge process on this state folder, in keyring
// mode too; it waits for the lock until ctx ends, at most
// [dirlock.DefaultWait]. fn saves with [Store.save], not Save.
func (s *Store) locked(ctx context.Context, fn func() error) error {
	unlock, err := dirlock.LockContext(ctx, s.dir)
	if err != nil {
		return fmt.Errorf("locking the sign-ins in %s: %w", s.dir, err)
	}
	defer unlock()
	return fn()
}

// save is Save under the folder's lock, which the caller holds.
func (s *Store) save(r *Record) (where string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := encode(r)
	path := s.file(r.Server, r.Resource)
	if err := s.keyring.Set(ref(r.Server, r.Resource), secret.New(string(data))); err == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return InKeyring, fmt.Errorf("removing the older sign-in file %s: %w", path, err)
		}
		return InKeyring, nil
	}
	if err := writeFile(s.dir, path, data); err != nil {
		return "", fmt.Errorf("saving the sign-in of %s: %w", r.Server, err)
	}
	return InFile + " (" + path + ")", nil
}

// Delete removes the sign-in of server at url from the keyring and the file,
// and reports whether there was one.
func (s *Store) Delete(server, url string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	err := s.keyring.Delete(ref(server, url))
	switch {
	case err == nil:
		found = true
	default: // not there, or no keyring: nothing to remove
		err = nil
	}
	ferr := os.Remove(s.file(server, url))
	switch {
	case ferr == nil:
		found = true
	case errors.Is(ferr, os.ErrNotExist):
		ferr = nil
	}
	return found, errors.Join(err, ferr)
}

// writeFile writes data to path (in dir, made 0700) as a 0600 file, whole or
// not at all; the caller holds dir's lock.
func writeFile(dir, path string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Replace(path, data, 0o600)
}
