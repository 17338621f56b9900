package podman

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestJoinRefusesForeignSocket: a service socket in the state folder that
// belongs to another user (who could serve a fake Podman API and receive
// every run's code) is refused before anything is sent to it.
func TestJoinRefusesForeignSocket(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("making a socket of another user needs root")
	}
	sock := filepath.Join(t.TempDir(), "podman-test.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Libpod-API-Version", "5.0.0")
		w.Write([]byte("OK"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	if err := os.Chown(sock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	c := newClient(testenv.Logger())
	err = c.join(t.Context(), &service{sock: sock})
	if err == nil || !strings.Contains(err.Error(), "belongs to") {
		t.Errorf("join of a socket owned by uid 65534: %v; want it refused as another user's", err)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the other user's server got %d requests; want none", n)
	}
}
