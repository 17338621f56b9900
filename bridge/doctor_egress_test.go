package bridge

import (
	"errors"
	"strings"
	"testing"
)

// TestEgressFinding: doctor fails when a sandbox pod reached any address,
// and when the probe did not run or said nothing; it passes only when every
// address was out of reach.
func TestEgressFinding(t *testing.T) {
	tests := []struct {
		name, stdout string
		err          error
		want         string // level
		detail       string // in the detail
	}{
		{name: "blocked", stdout: "closed 1.1.1.1:443 TimeoutError\nclosed 169.254.169.254:80 OSError\n", want: FindOK, detail: "reached none of 1.1.1.1:443, 169.254.169.254:80"},
		{name: "metadata reached", stdout: "closed 1.1.1.1:443 TimeoutError\nopen 169.254.169.254:80\n", want: FindFail, detail: "reached 169.254.169.254:80"},
		{name: "nothing printed", stdout: "", want: FindFail, detail: "printed nothing"},
		{name: "did not run", err: errors.New("pod unschedulable"), want: FindFail, detail: "did not run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := egressFinding(tt.stdout, tt.err)
			if f.Level != tt.want || !strings.Contains(f.Detail, tt.detail) {
				t.Errorf("egressFinding = %s %q; want %s containing %q", f.Level, f.Detail, tt.want, tt.detail)
			}
		})
	}
}
