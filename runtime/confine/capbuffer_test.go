package confine

import "testing"

func TestCapBuffer(t *testing.T) {
	b := &CapBuffer{Max: 4}
	b.Write([]byte("ab"))
	b.Write([]byte("cdef"))
	if got := b.String(); got != "abcd… (2 more bytes)" {
		t.Errorf("CapBuffer = %q", got)
	}
}
