package oauth

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

func testRecord(url string) *Record {
	return &Record{
		Server: "hosted", Resource: url, Issuer: "https://as.example", TokenURL: "https://as.example/token",
		ClientID: "client-1", ClientSecret: secret.New("client-secret-1"), Registered: true,
		AccessToken: secret.New("access-token-1"), RefreshToken: secret.New("refresh-token-1"),
		Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), TokenType: "Bearer",
	}
}

// TestStore: a sign-in goes to the keyring when there is one and to a 0600
// file under the state directory when there is none; each is found again by
// server and URL only, and Delete removes it from both.
func TestStore(t *testing.T) {
	const url = "https://h.example/mcp"
	for _, tt := range []struct {
		name    string
		keyring Keyring
		where   string
	}{
		{"keyring", newFakeKeyring(), InKeyring},
		{"no keyring", noKeyring{}, InFile},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			s := NewStoreWith(state, tt.keyring)
			if r, err := s.Load("hosted", url); r != nil || err != nil {
				t.Fatalf("Load before Save = %v, %v; want nothing", r, err)
			}
			where, err := s.Save(testRecord(url))
			if err != nil || !strings.HasPrefix(where, tt.where) {
				t.Fatalf("Save = %q, %v; want %s", where, err, tt.where)
			}
			files, _ := filepath.Glob(filepath.Join(Dir(state), "*.json"))
			if tt.where == InFile {
				if len(files) != 1 {
					t.Fatalf("files %v; want one", files)
				}
				fi, _ := os.Stat(files[0])
				di, _ := os.Stat(Dir(state))
				if runtime.GOOS != "windows" && (fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700) {
					t.Errorf("file mode %v, folder %v; want 0600 and 0700", fi.Mode().Perm(), di.Mode().Perm())
				}
			} else if len(files) != 0 {
				t.Errorf("files %v with a keyring; want none", files)
			}
			got, err := s.Load("hosted", url)
			if err != nil || got.AccessToken.Reveal() != "access-token-1" || got.RefreshToken.Reveal() != "refresh-token-1" ||
				got.ClientSecret.Reveal() != "client-secret-1" || !got.Expiry.Equal(testRecord(url).Expiry) || !got.Registered {
				t.Fatalf("Load = %+v, %v; want what was saved", got, err)
			}
			if r, _ := s.Load("hosted", url+"/other"); r != nil {
				t.Error("the sign-in is found under another URL")
			}
			if r, _ := s.Load("other", url); r != nil {
				t.Error("the sign-in is found under another server's name")
			}
			if found, err := s.Delete("hosted", url); !found || err != nil {
				t.Errorf("Delete = %v, %v; want found", found, err)
			}
			if r, _ := s.Load("hosted", url); r != nil {
				t.Error("Load after Delete found it")
			}
			if found, err := s.Delete("hosted", url); found || err != nil {
				t.Errorf("second Delete = %v, %v; want nothing found, no error", found, err)
			}
		})
	}
}

// TestStoreKeyringReturns: a sign-in saved to the file while there was no
// keyring moves to the keyring on the next save, and the file goes.
func TestStoreKeyringReturns(t *testing.T) {
	const url = "https://h.example/mcp"
	state := t.TempDir()
	if _, err := NewStoreWith(state, noKeyring{}).Save(testRecord(url)); err != nil {
		t.Fatal(err)
	}
	s := NewStoreWith(state, newFakeKeyring())
	r, err := s.Load("hosted", url)
	if err != nil || r == nil {
		t.Fatalf("Load from the file with a keyring = %v, %v", r, err)
	}
	if where, err := s.Save(r); where != InKeyring || err != nil {
		t.Fatalf("Save = %q, %v; want the keyring", where, err)
	}
	if files, _ := filepath.Glob(filepath.Join(Dir(state), "*.json")); len(files) != 0 {
		t.Errorf("files %v left behind", files)
	}
}

// TestRecordRedactsItself: printing, logging or encoding a Record shows no
// token and no client secret.
func TestRecordRedactsItself(t *testing.T) {
	r := testRecord("https://h.example/mcp")
	var b strings.Builder
	slog.New(slog.NewJSONHandler(&b, nil)).Info("x", "record", r, "value", *r)
	data, _ := json.Marshal(r)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v", r, r, *r), b.String(), string(data)} {
		for _, v := range []string{"access-token-1", "refresh-token-1", "client-secret-1"} {
			if strings.Contains(s, v) {
				t.Errorf("%q holds %s", s, v)
			}
		}
	}
}

// TestStoreCorruptRecord: an undecodable sign-in file (a torn write) is moved
// aside, with an error naming it and what to do, and is absent afterwards,
// so that login works again.
func TestStoreCorruptRecord(t *testing.T) {
	const url = "https://h.example/mcp"
	state := t.TempDir()
	s := NewStoreWith(state, noKeyring{})
	path := s.file("hosted", url)
	os.MkdirAll(Dir(state), 0o700)
	os.WriteFile(path, []byte(`{"access_token": "tok`), 0o600)
	_, err := s.Load("hosted", url)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "codebridge login hosted") {
		t.Fatalf("Load of a torn file = %v; want an error naming %s and codebridge login", err, path)
	}
	if strings.Contains(err.Error(), "tok") && !strings.Contains(err.Error(), "token") {
		t.Errorf("the error quotes the file: %v", err)
	}
	if r, err := s.Load("hosted", url); r != nil || err != nil {
		t.Errorf("Load after = %v, %v; want nothing stored", r, err)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("moved aside: %v; want one file", aside)
	}
}
