package dashboard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/bridge/review"
	"github.com/codebridge-mcp/codebridge/bridge/scan"
)

// pageTimeout bounds what a page waits for (a server's tool list).
const pageTimeout = 20 * time.Second

func (d *Dashboard) serversPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	d.render(w, "servers", "Servers", struct {
		Servers   []Server
		CanSignIn bool
	}{d.opts.Source.Servers(ctx), d.opts.SignIn != nil}, nil)
}

// heldView is one quarantined tool as the tools page shows it.
type heldView struct {
	Server, Tool string
	Why          string
	Diff         []string
	Findings     []scan.Finding
	CanApprove   bool
	Denied       string // when a person denied this definition, or ""
}

// heldViews are the held tools of every server, by server name.
func heldViews(held map[string][]review.Held) []heldView {
	var out []heldView
	for _, srv := range slices.Sorted(maps.Keys(held)) {
		repeats := review.Repeated(held[srv])
		for _, h := range held[srv] {
			v := heldView{Server: srv, Tool: h.Now.Name, Diff: h.Diff(), Findings: h.Flag.Findings, CanApprove: len(repeats) == 0}
			if !h.Denied.IsZero() {
				v.Denied = h.Denied.Local().Format("2006-01-02 15:04:05")
			}
			switch {
			case len(repeats) > 0:
				v.Why = "the server lists " + strings.Join(repeats, ", ") + " more than once: it cannot be approved; fix or remove the server"
			case h.State == manifest.Flagged:
				v.Why = "held by the tool-poisoning scanner"
			case h.Pinned:
				v.Why = fmt.Sprintf("changed since it was pinned on %s (%s)", h.Pin.Pinned.Local().Format("2006-01-02 15:04:05"),
					strings.Join(manifest.Differences(h.Pin.Tool, h.Now), ", "))
			default:
				v.Why = "new, held until approved (MCP_BRIDGE_QUARANTINE_NEW)"
			}
			out = append(out, v)
		}
	}
	return out
}

func (d *Dashboard) toolsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	held, err := d.opts.Source.Held(ctx)
	q := r.URL.Query()
	d.render(w, "tools", "Quarantined tools", struct {
		Held             []heldView
		Approved, Denied string
	}{heldViews(held), q.Get("approved"), q.Get("denied")}, err)
}

// decide takes a person's decision on a quarantined tool (the form's
// server and tool) through do, then shows the tools page saying what was
// done.
func (d *Dashboard) decide(done string, do func(Source, context.Context, string, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		server, tool := r.PostFormValue("server"), r.PostFormValue("tool")
		if server == "" || tool == "" {
			http.Error(w, "want a server and a tool", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
		defer cancel()
		if err := do(d.opts.Source, ctx, server, tool); err != nil {
			w.WriteHeader(http.StatusConflict)
			d.render(w, "done", "Nothing "+done, nil, err)
			return
		}
		d.logger.Info("dashboard: "+done+" a quarantined tool", "server", server, "tool", tool)
		http.Redirect(w, r, Prefix+"/tools?"+done+"="+url.QueryEscape(server+"."+tool), http.StatusSeeOther)
	}
}

func (d *Dashboard) signIn(w http.ResponseWriter, r *http.Request) {
	server := r.PostFormValue("server")
	if d.opts.SignIn == nil || server == "" {
		http.Error(w, "no sign-in here", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	u, err := d.opts.SignIn(ctx, server)
	if err == nil {
		if p, perr := url.Parse(u); perr != nil || (p.Scheme != "https" && p.Scheme != "http") {
			err = fmt.Errorf("the sign-in address %q is not a web address", u)
		}
	}
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		d.render(w, "signin", "Sign-in", struct{ Server, URL string }{server, ""}, err)
		return
	}
	d.render(w, "signin", "Sign-in", struct{ Server, URL string }{server, u}, nil)
}

// runsView is the runs page's data.
type runsView struct {
	Sessions     []sessionView
	LiveSessions int
	HaveLive     bool
	Runs         []observe.Run
	FromAudit    bool
}

type sessionView struct {
	Session string
	Runs    int
	Calls   int
	Last    time.Time
}

// recent is the dashboard's [Recent]: its own, or one read now from the
// audit log.
func (d *Dashboard) recent() (*Recent, error) {
	if d.opts.Recent != nil {
		return d.opts.Recent, nil
	}
	if d.opts.AuditDir == "" {
		return NewRecent(d.now), nil
	}
	since := d.now().Add(-ChartMinutes * time.Minute)
	recs, _, err := audit.Tail(d.opts.AuditDir, 0, func(r *audit.Record) bool { return !r.Time.Before(since) })
	return FromAudit(recs, d.now), err
}

func (d *Dashboard) runsPage(w http.ResponseWriter, r *http.Request) {
	rec, err := d.recent()
	v := runsView{Runs: rec.Runs(), FromAudit: d.opts.Recent == nil}
	if d.opts.Sessions != nil {
		v.LiveSessions, v.HaveLive = d.opts.Sessions(), true
	}
	bySession := map[string]*sessionView{}
	for _, run := range v.Runs {
		s := bySession[run.Session]
		if s == nil {
			s = &sessionView{Session: run.Session}
			bySession[run.Session] = s
		}
		s.Runs++
		s.Calls += len(run.Calls) + run.CallsMore
		if end := run.Start.Add(run.Duration); end.After(s.Last) {
			s.Last = end
		}
	}
	for _, s := range bySession {
		v.Sessions = append(v.Sessions, *s)
	}
	slices.SortFunc(v.Sessions, func(a, b sessionView) int { return b.Last.Compare(a.Last) })
	d.render(w, "runs", "Sessions and runs", v, err)
}

// auditPageSize is how many records one page of the audit log shows.
const auditPageSize = 50

// auditFilter is what the audit page shows.
type auditFilter struct {
	Server, Tool, Outcome, Kind, Session string
	Since                                string // a duration back from now (e.g. 1h), or ""
	Page                                 int    // from 1, newest first
}

func (f auditFilter) keep(since time.Time) func(*audit.Record) bool {
	return func(r *audit.Record) bool {
		kind := r.Kind
		if kind == "" {
			kind = "call"
		}
		return (f.Server == "" || r.Server == f.Server) && (f.Tool == "" || r.Tool == f.Tool) &&
			(f.Outcome == "" || r.Outcome == f.Outcome) && (f.Kind == "" || kind == f.Kind) &&
			(f.Session == "" || r.Session == f.Session) && (since.IsZero() || !r.Time.Before(since))
	}
}

// query is the address of page n of f.
func (f auditFilter) query(n int) string {
	q := url.Values{}
	for k, v := range map[string]string{"server": f.Server, "tool": f.Tool, "outcome": f.Outcome, "kind": f.Kind, "session": f.Session, "since": f.Since} {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set("page", strconv.Itoa(n))
	return Prefix + "/audit?" + q.Encode()
}

type auditView struct {
	Filter     auditFilter
	Records    []audit.Record
	Total      int
	Prev, Next string // queries of the neighbouring pages, "" when none
	Pages      int
	Off        bool
	Outcomes   []string
	Kinds      []string
	Skipped    int
}

func (d *Dashboard) auditPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := auditFilter{Server: q.Get("server"), Tool: q.Get("tool"), Outcome: q.Get("outcome"), Kind: q.Get("kind"),
		Session: q.Get("session"), Since: q.Get("since")}
	f.Page, _ = strconv.Atoi(q.Get("page"))
	f.Page = max(f.Page, 1)
	v := auditView{Filter: f, Off: d.opts.AuditDir == "",
		Outcomes: []string{audit.OutcomeOK, audit.OutcomeToolError, audit.OutcomeCancelled, "policy_denied", "quarantined", "timeout", "server_failed", audit.OutcomeApproved},
		Kinds:    []string{"call", audit.KindResource, audit.KindPrompt, audit.KindPin, audit.KindSignIn, audit.KindMemorySave, audit.KindMemoryDelete, audit.KindToolSave, audit.KindToolDelete}}
	var err error
	var since time.Time
	if f.Since != "" {
		back, perr := time.ParseDuration(f.Since)
		if perr != nil || back <= 0 {
			err = fmt.Errorf("since %q: want a duration such as 15m or 24h", f.Since)
		} else {
			since = d.now().Add(-back)
		}
	}
	if !v.Off && err == nil {
		var recs []audit.Record
		recs, v.Skipped, err = audit.Tail(d.opts.AuditDir, 0, f.keep(since))
		v.Total = len(recs)
		v.Pages = max(1, (len(recs)+auditPageSize-1)/auditPageSize)
		// Newest first: page 1 holds the last auditPageSize records.
		end := len(recs) - (f.Page-1)*auditPageSize
		start := max(0, end-auditPageSize)
		if end > 0 {
			v.Records = slices.Clone(recs[start:end])
			slices.Reverse(v.Records)
		}
		if f.Page > 1 {
			v.Prev = f.query(f.Page - 1)
		}
		if start > 0 {
			v.Next = f.query(f.Page + 1)
		}
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	d.render(w, "audit", "Audit log", v, err)
}

func (d *Dashboard) settingsPage(w http.ResponseWriter, r *http.Request) {
	d.render(w, "settings", "Settings", struct {
		File   string
		Values any
	}{d.opts.SettingsFile, d.opts.Settings}, nil)
}

func (d *Dashboard) chartPage(w http.ResponseWriter, r *http.Request) {
	rec, err := d.recent()
	d.render(w, "chart", "Calls in the last hour", charts(rec.Hour(), d.now()), err)
}
