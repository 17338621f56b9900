package settings

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "512m", want: 512 << 20},
		{in: "512M", want: 512 << 20},
		{in: "64MiB", want: 64 << 20},
		{in: "64mb", want: 64 << 20},
		{in: "1g", want: 1 << 30},
		{in: "1.5g", want: 3 << 29},
		{in: "2t", want: 2 << 40},
		{in: "100k", want: 100 << 10},
		{in: "1048576", want: 1 << 20},
		{in: "4096b", want: 4096},
		{in: " 256m ", want: 256 << 20},
		{in: "", wantErr: "no number"},
		{in: "m", wantErr: "no number"},
		{in: "abc", wantErr: "unknown unit"},
		{in: "12x", wantErr: "unknown unit"},
		{in: "-5m", wantErr: "unknown unit"},
		{in: "1.2.3m", wantErr: "not a number"},
		{in: "0", wantErr: "between"},
		{in: "0.1b", wantErr: "between"},
		{in: "99999999t", wantErr: "between"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSize(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}
