package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		command string
		stdin   string
		want    string // the JSON printed; "" for nothing
		wantErr string
	}{
		{
			name:    "add 1.0.0",
			command: "ADD",
			stdin:   `{"cniVersion":"1.0.0","name":"codebridge-none","type":"codebridge-cni"}`,
			want:    `{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/run/netns/x"}],"ips":[{"address":"127.0.0.2/8","interface":0}]}`,
		},
		{
			name:    "add 0.3.1 names the IP version",
			command: "ADD",
			stdin:   `{"cniVersion":"0.3.1","name":"codebridge-none","type":"codebridge-cni"}`,
			want:    `{"cniVersion":"0.3.1","interfaces":[{"name":"eth0","sandbox":"/run/netns/x"}],"ips":[{"address":"127.0.0.2/8","interface":0,"version":"4"}]}`,
		},
		{name: "del", command: "DEL", stdin: `{}`},
		{name: "check", command: "CHECK", stdin: `{}`},
		{
			name:    "version",
			command: "VERSION",
			want:    `{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}`,
		},
		{name: "add with bad config", command: "ADD", stdin: `{`, wantErr: "reading the network configuration"},
		{name: "unknown command", command: "FROB", wantErr: `unknown CNI_COMMAND "FROB"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(tt.command, "/run/netns/x", "eth0", strings.NewReader(tt.stdin))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("run() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("run() error = %v", err)
			}
			if tt.want == "" {
				if out != nil {
					t.Fatalf("run() = %v, want nothing printed", out)
				}
				return
			}
			got, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("run() printed\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
