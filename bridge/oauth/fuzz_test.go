package oauth

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/oauth2"

	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// FuzzDecode reads stored sign-ins. A record encoded and decoded again comes
// back field for field (its strings valid UTF-8, as JSON keeps them, and its
// times within the years JSON can write); anything decode accepts encodes and
// decodes to the same again; and a refused record's error never quotes the
// access token it held.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`,"server":"gh","expiry":"2030-01-02T03:04:05Z"}`), "gho_secrettoken", "gh", int64(1700000000), true)
	f.Add([]byte(`,"scopes":["a",1]}`), "tok\"en\\withquotes", "", int64(0), false)
	f.Add([]byte(`}`), "\u00e9\u2028tok", "srv", int64(-62135596800), false)
	f.Add([]byte(`,"expiry":"not a time"}`), "abcdefghij", "x", int64(253402300799), true)
	f.Add([]byte(`,"version":1e999}`), "abcdefghij", "x", int64(1), true)
	f.Add([]byte(`,"expiry":"10000-01-01T00:00:00Z"}`), "abcdefghij", "x", int64(1), true)
	f.Fuzz(func(t *testing.T, rest []byte, token, server string, unix int64, registered bool) {
		data := append([]byte(`{"access_token":`+quote(token)), rest...)
		rec, err := decode(data)
		if err != nil {
			if len(token) >= 6 && strings.Contains(err.Error(), token) {
				t.Fatalf("decode(%q): the error %q quotes the access token", data, err)
			}
		} else if again, err := decode(encode(rec)); err != nil {
			t.Fatalf("decode(%q) accepted it, but not its own encoding %q: %v", data, encode(rec), err)
		} else if d := diffRecords(rec, again); d != "" {
			t.Fatalf("decode(%q), encoded and decoded again, changed: %s", data, d)
		}

		if !utf8.ValidString(token) || !utf8.ValidString(server) {
			return // JSON replaces invalid UTF-8; stored fields come from JSON
		}
		tm := time.Unix(unix%253402300800, 0).UTC() // years 0001 to 9999: what JSON's time format holds
		r := &Record{
			Server: server, Resource: "https://" + server, ClientID: server, ClientSecret: secret.New(token),
			Registered: registered, Scopes: []string{server, token}, AccessToken: secret.New(token),
			RefreshToken: secret.New(token + server), Expiry: tm, SignedIn: tm,
		}
		got, err := decode(encode(r))
		if err != nil {
			t.Fatalf("decode(encode(%+v)) = %v", r, err)
		}
		if d := diffRecords(r, got); d != "" {
			t.Fatalf("decode(encode(r)) differs: %s", d)
		}
	})
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// diffRecords compares two records by their stored form, secrets included;
// times compare by instant.
func diffRecords(a, b *Record) string {
	if !a.Expiry.Equal(b.Expiry) || !a.SignedIn.Equal(b.SignedIn) {
		return "times " + a.Expiry.String() + "/" + a.SignedIn.String() + " became " + b.Expiry.String() + "/" + b.SignedIn.String()
	}
	ea, eb := encode(a), encode(b)
	if !bytes.Equal(ea, eb) {
		return string(ea) + " became " + string(eb)
	}
	if len(ea) == 0 {
		return "nothing was encoded"
	}
	return ""
}

// FuzzSubject reads who signed in from an id_token the authorization server
// sent. It never panics; what it returns is empty or a string value of the
// token's payload; and a well-formed token's claims come back in the
// documented order of preference.
func FuzzSubject(f *testing.F) {
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjMiLCJlbWFpbCI6ImFAYi5jIn0.", "a@b.c", "user", "Name", "123")
	f.Add("a.b.c", "", "", "", "sub")
	f.Add("..", "", "", "n", "")
	f.Add("x.eyJFTUFJTCI6InVwcGVyIn0.y", "", "u\u00e9", "", "")
	f.Add("x.bnVsbA.y", "\xff", "", "", "")
	f.Add("x.eyJlbWFpbCI6MX0.y", "", "", "", "")
	f.Add("x.eyJlbWFpbCI6IiJ9IGdhcmJhZ2U.y", "", "", "", "s")
	f.Fuzz(func(t *testing.T, id, email, user, name, sub string) {
		got := subject((&oauth2.Token{}).WithExtra(map[string]any{"id_token": id}))
		if got != "" {
			parts := strings.Split(id, ".")
			payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var claims map[string]any
			json.NewDecoder(bytes.NewReader(payload)).Decode(&claims)
			found := false
			for _, v := range claims {
				found = found || v == got
			}
			if !found {
				t.Fatalf("subject(%q) = %q, not a string of its payload %q", id, got, payload)
			}
		}

		payload, _ := json.Marshal(map[string]string{"email": email, "preferred_username": user, "name": name, "sub": sub})
		tok := "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(payload) + ".sig"
		var norm map[string]string // JSON's own spelling of the strings (invalid UTF-8 replaced)
		json.Unmarshal(payload, &norm)
		want := cmp.Or(norm["email"], norm["preferred_username"], norm["name"], norm["sub"])
		if got := subject((&oauth2.Token{}).WithExtra(map[string]any{"id_token": tok})); got != want {
			t.Fatalf("subject of claims %s = %q, want %q", payload, got, want)
		}
	})
}
