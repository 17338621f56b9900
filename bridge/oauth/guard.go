package oauth

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
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
// the container engine's API or an intranet host. The one exception is the
// server's own host on another port, where its host is an address or
// localhost: a server on 127.0.0.1 may have its authorization server on
// 127.0.0.1 too, never on 127.0.0.2 or a private address.
func Client(def *discovery.Server, timeout time.Duration) *http.Client {
	own := http.DefaultTransport.(*http.Transport).Clone()
	other := http.DefaultTransport.(*http.Transport).Clone()
	origin := ""
	var home []netip.Addr
	if u, err := url.Parse(def.URL); err == nil {
		origin = u.Scheme + "://" + u.Host
		home = hostAddrs(u.Hostname())
	}
	control := func(network, address string, c syscall.RawConn) error { return refuseLocal(home, address) }
	other.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: control}).DialContext
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

// hostAddrs are the addresses host names without a look-up: itself if it
// is an address, the loopback ones for localhost, else none.
func hostAddrs(host string) []netip.Addr {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}
	}
	return nil
}

// refuseLocal refuses to dial a local or private address, unless it is one
// of home's.
func refuseLocal(home []netip.Addr, address string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	ip = ip.Unmap()
	if slices.Contains(home, ip) {
		return nil
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() ||
		ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || cgnat.Contains(ip) {
		return fmt.Errorf("refused to connect to %s: an OAuth endpoint off the server's own origin must have a public address", ip)
	}
	return nil
}
