package confine

import "testing"

func TestLoopbackRegistry(t *testing.T) {
	for ref, want := range map[string]bool{
		"127.0.0.1:5000/x/y:1": true, "[::1]:5000/y": true, "localhost:5000/y": true, "localhost/y:1": true,
		"docker.io/library/python:3.12": false, "library/python": false, "python": false, "10.0.0.1:5000/y": false,
		"registry.example:443/y": false,
	} {
		if got := LoopbackRegistry(ref); got != want {
			t.Errorf("LoopbackRegistry(%q) = %v; want %v", ref, got, want)
		}
	}
}
