package discovery

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAlias(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "_"},
		{"echo", "echo"},
		{"get-sum", "get_sum"},
		{"server.everything", "server_everything"},
		{"my server", "my_server"},
		{"2fa", "_2fa"},
		{"9", "_9"},
		{"class", "class_"},
		{"None", "None_"},
		{"await", "await_"},
		{"match", "match"}, // soft keyword: a valid identifier
		{"Class", "Class"},
		{"café", "caf_"},
		{"a/b@c", "a_b_c"},
		{"_", "_"},
		{"-", "_"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Alias(tt.in); got != tt.want {
				t.Errorf("Alias(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestAliases(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		want  map[string]string
	}{
		{
			name:  "no collisions",
			names: []string{"echo", "get-sum"},
			want:  map[string]string{"echo": "echo", "get-sum": "get_sum"},
		},
		{
			name:  "numbered in order",
			names: []string{"a-b", "a.b", "a b"},
			want:  map[string]string{"a-b": "a_b", "a.b": "a_b_2", "a b": "a_b_3"},
		},
		{
			name:  "valid identifier keeps its name",
			names: []string{"a-b", "a_b"},
			want:  map[string]string{"a-b": "a_b_2", "a_b": "a_b"},
		},
		{
			name:  "suffix already taken",
			names: []string{"a-b", "a.b", "a_b_2"},
			want:  map[string]string{"a-b": "a_b", "a.b": "a_b_3", "a_b_2": "a_b_2"},
		},
		{
			name:  "keyword and its escape",
			names: []string{"class", "class_"},
			want:  map[string]string{"class": "class__2", "class_": "class_"},
		},
		{
			name:  "duplicates share",
			names: []string{"x-y", "x-y"},
			want:  map[string]string{"x-y": "x_y"},
		},
		{
			name:  "empty",
			names: nil,
			want:  map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Aliases(tt.names)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Aliases(%q) mismatch (-want +got):\n%s", tt.names, diff)
			}
			seen := map[string]string{}
			for n, a := range got {
				if Alias(a) != a {
					t.Errorf("alias %q of %q is not a valid identifier", a, n)
				}
				if other, ok := seen[a]; ok && other != n {
					t.Errorf("alias %q used for %q and %q", a, other, n)
				}
				seen[a] = n
			}
		})
	}
}
