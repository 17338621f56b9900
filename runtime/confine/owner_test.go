package confine

import (
	"os"
	"testing"
)

func TestOwnerStale(t *testing.T) {
	self := Owner{Host: "h", PID: os.Getpid()}
	self.Start, _ = ProcessStart(self.PID)
	ppid := os.Getppid()
	type test struct {
		name   string
		labels map[string]string
		want   bool
	}
	tests := []test{
		{"no owner", map[string]string{LabelManaged: "true"}, false},
		{"malformed owner", map[string]string{LabelOwner: "h"}, false},
		{"bad pid", map[string]string{LabelOwner: "h/x"}, false},
		{"other host, dead pid", map[string]string{LabelOwner: "other/999999999"}, false},
		{"dead pid", map[string]string{LabelOwner: "h/999999999"}, true},
		{"live parent", map[string]string{LabelOwner: Owner{Host: "h", PID: ppid}.ID()}, false},
		{"us", self.Labels(), false},
	}
	if _, ok := ProcessStart(ppid); ok {
		tests = append(tests,
			test{"reused pid", map[string]string{LabelOwner: Owner{Host: "h", PID: ppid}.ID(), LabelOwnerStart: "1"}, true},
			test{"our pid, earlier process", map[string]string{LabelOwner: self.ID(), LabelOwnerStart: "1"}, true},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := self.Stale(tt.labels); got != tt.want {
				t.Errorf("stale(%v) = %v, want %v", tt.labels, got, tt.want)
			}
		})
	}
}
