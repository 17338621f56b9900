package oauth

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// Client is the HTTP client of the OAuth requests for def (discovery,
// registration, token requests and refreshes), each bounded by timeout:
// requests to def's own origin go as any to def do; any other (an
// authorization server, a registration or token endpoint that the server's
// metadata names) may reach only a public address, never loopback, private,
// link-local or CGNAT (100.64.0.0/10) ones, whatever name resolves to them.
// Metadata chosen by a remote server then cannot make codebridge post to
// the container engine's API or an intranet host.
func Client(def *discovery.Server, timeout time.Duration) *http.Client {
	own := http.DefaultTransport.(*http.Transport).Clone()
	other := http.DefaultTransport.(*http.Transport).Clone()
	other.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseLocal}).DialContext
	origin := ""
	if u, err := url.Parse(def.URL); err == nil {
		origin = u.Scheme + "://" + u.Host
	}
	return &http.Client{Timeout: timeout, Transport: byOrigin{origin: origin, own: own, other: other}}
}

// byOrigin sends requests to origin through own, others through other.
type byOrigin struct {
	origin     string
	own, other http.RoundTripper
}

func (b byOrigin) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.origin != "" && req.URL.Scheme+"://"+req.URL.Host == b.origin {
		return b.own.RoundTrip(req)
	}
	return b.other.RoundTrip(req)
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// refuseLocal is a dialer's Control refusing local and private addresses.
func refuseLocal(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() ||
		ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || cgnat.Contains(ip) {
		return fmt.Errorf("refused to connect to %s: an OAuth endpoint off the server's own origin must have a public address", ip)
	}
	return nil
}
