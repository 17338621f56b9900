package host

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Attachment kinds: images come back as MCP image content, files as embedded
// resources.
const (
	kindImage = "image"
	kindFile  = "file"
)

// AttachmentInfo describes an attachment in structuredContent, without its
// data; Reason says why a dropped one was dropped.
type AttachmentInfo struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	MIMEType string `json:"mime_type"`
	Bytes    int    `json:"bytes"`
	Reason   string `json:"reason,omitempty"`
}

// Attachments collects the images and files one run returns, within the
// run's limits. The sandbox's requests arrive concurrently.
type Attachments struct {
	max, maxN, maxSum int
	setting           func(key string) string // nil names the key

	mu      sync.Mutex // protects following
	kept    []attachment
	sum     int
	dropped []AttachmentInfo // the first maxDropped
	more    int              // dropped beyond those, only counted
	names   map[string]bool  // given out, kept or dropped
}

// maxDropped bounds the dropped attachments a run's result describes one by
// one, so code that sends endless oversized attachments costs the host little.
const maxDropped = 20

type attachment struct {
	AttachmentInfo
	data []byte
}

// AttachLimits bound what a run returns as attachments.
type AttachLimits struct {
	Max    int // bytes of one attachment
	MaxN   int // attachments of one run
	MaxSum int // bytes of a run's attachments together
	// Setting names a limit's setting for messages (see [Options.Setting]):
	// max_attachment_size, max_attachments, max_attachments_total.
	Setting func(key string) string
}

// NewAttachments returns a run's empty collection, with the limits l.
func NewAttachments(l AttachLimits) *Attachments {
	return &Attachments{max: l.Max, maxN: l.MaxN, maxSum: l.MaxSum, setting: l.Setting}
}

// add keeps p, or records it as dropped and returns an error the sandbox
// raises as MCPError(too_large) naming the limit.
func (a *Attachments) add(p protocol.AttachParams) error {
	switch {
	case p.Kind != kindImage && p.Kind != kindFile:
		return &protocol.Error{Code: protocol.CodeBadArguments, Message: fmt.Sprintf("attachment kind %q: want image or file", p.Kind)}
	case p.Data == nil && p.Bytes <= a.max:
		return &protocol.Error{Code: protocol.CodeBadArguments, Message: "attachment without data: the sandbox omits only data over the limit"}
	}
	if p.Data != nil {
		p.Bytes = len(p.Data)
	}
	info := AttachmentInfo{Kind: p.Kind, Name: path.Base(cmp.Or(p.Name, p.Kind)), MIMEType: p.MIMEType, Bytes: p.Bytes}
	if info.MIMEType == "" {
		info.MIMEType = "application/octet-stream"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var why string
	switch {
	case p.Bytes > a.max:
		why = fmt.Sprintf("%s is over the %s limit per image or file (%s)", ByteSize(p.Bytes), ByteSize(a.max), settingOf(a.setting, "max_attachment_size"))
	case len(a.kept) >= a.maxN:
		why = fmt.Sprintf("this run already returned %d images and files, the most one run may (%s)", len(a.kept), settingOf(a.setting, "max_attachments"))
	case a.sum+p.Bytes > a.maxSum:
		why = fmt.Sprintf("with it this run would return %s of images and files, over the %s limit per run (%s)",
			ByteSize(a.sum+p.Bytes), ByteSize(a.maxSum), settingOf(a.setting, "max_attachments_total"))
	}
	if why == "" {
		info.Name = a.unique(info.Name)
		a.kept = append(a.kept, attachment{AttachmentInfo: info, data: p.Data})
		a.sum += p.Bytes
		return nil
	}
	if len(a.dropped) < maxDropped { // names are made unique only for what the result lists
		info.Name = a.unique(info.Name)
		info.Reason = why
		a.dropped = append(a.dropped, info)
	} else {
		a.more++
	}
	return &protocol.Error{Code: protocol.CodeTooLarge, Message: fmt.Sprintf("%s %q not returned: %s. %s", p.Kind, info.Name, why, shrinkHint(p.Kind))}
}

// unique returns name, or name with a number before its extension when the
// run already returned that name (figure-1.png twice: figure-1-2.png).
func (a *Attachments) unique(name string) string {
	if a.names == nil {
		a.names = map[string]bool{}
	}
	out := name
	ext := path.Ext(name)
	for n := 2; a.names[out]; n++ {
		out = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, ext), n, ext)
	}
	a.names[out] = true
	return out
}

func shrinkHint(kind string) string {
	if kind == kindImage {
		return "Return fewer or smaller images: a smaller figsize or dpi, JPEG instead of PNG, or a summary table instead"
	}
	return "Return a smaller file (sample or aggregate the rows, compress it), or print a summary instead"
}

// Contents is what was kept, as MCP content in the order it came, the
// structured descriptions of what was kept and of the first dropped ones, and
// how many more were dropped.
func (a *Attachments) Contents() (content []mcp.Content, kept, dropped []AttachmentInfo, more int) {
	if a == nil {
		return nil, nil, nil, 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []mcp.Content
	var infos []AttachmentInfo
	for _, at := range a.kept {
		infos = append(infos, at.AttachmentInfo)
		if at.Kind == kindImage {
			out = append(out, &mcp.ImageContent{Data: at.data, MIMEType: at.MIMEType})
			continue
		}
		rc := &mcp.ResourceContents{URI: attachmentURI(at.Name), MIMEType: at.MIMEType}
		if isText(at.MIMEType) && utf8.Valid(at.data) {
			rc.Text = string(at.data)
		} else {
			rc.Blob = at.data
		}
		out = append(out, &mcp.EmbeddedResource{Resource: rc})
	}
	return out, infos, a.dropped, a.more
}

// attachmentURI is the URI of a file the run returned: sandbox:///NAME,
// NAME one path segment in which every byte but RFC 3986's unreserved
// characters is percent-encoded (and the dots of "." and ".."), so that no
// name can add a folder, a query, a fragment or an authority, and the URI
// parses back to the name.
func attachmentURI(name string) string {
	if name == "." || name == ".." {
		return "sandbox:///" + strings.Repeat("%2E", len(name))
	}
	var b strings.Builder
	b.WriteString("sandbox:///")
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// isText tells whether a MIME type's content is text, to embed it as text.
func isText(mimeType string) bool {
	t, _, _ := strings.Cut(mimeType, ";")
	t = strings.TrimSpace(strings.ToLower(t))
	if strings.HasPrefix(t, "text/") || strings.HasSuffix(t, "+json") || strings.HasSuffix(t, "+xml") {
		return true
	}
	switch t {
	case "application/json", "application/xml", "application/javascript", "application/x-ndjson",
		"application/yaml", "application/x-yaml", "application/toml", "application/sql", "image/svg+xml":
		return true
	}
	return false
}

// Host answers the requests of one run: attach into a, every other method
// with h.
func (a *Attachments) Host(h protocol.Handler) python.Host {
	return protocol.Server{Handler: attachHost{Handler: h, att: a}}
}

// attachHost answers the sandbox's attach requests for one run and passes
// every other request on.
type attachHost struct {
	protocol.Handler
	att *Attachments
}

// Attach implements [protocol.Handler].
func (h attachHost) Attach(_ context.Context, p protocol.AttachParams) (protocol.NoResult, error) {
	return protocol.NoResult{}, h.att.add(p)
}
