package podman

import "testing"

func TestCapBuffer(t *testing.T) {
	b := &capBuffer{max: 4}
	b.Write([]byte("ab"))
	b.Write([]byte("cdef"))
	if got := b.String(); got != "abcd… (2 more bytes)" {
		t.Errorf("capBuffer = %q", got)
	}
}
