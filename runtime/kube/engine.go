package kube

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// Options configure an [Engine]. Zero values mean the defaults.
type Options struct {
	// Config is the cluster to use; nil loads it ([LoadConfig]) on first
	// use.
	Config *Config
	// Namespace holds the sandbox pods; "" is the context's namespace, else
	// "default".
	Namespace string
	// Image is the sandbox image; "" is [confine.DefaultImage].
	Image string
	// PullPolicy is the pods' imagePullPolicy; "" is IfNotPresent.
	PullPolicy string
	// RuntimeClass is the pods' runtimeClassName (e.g. gvisor); "" is the
	// cluster's default.
	RuntimeClass string
	// Seccomp names a Localhost seccomp profile, a path relative to the
	// kubelet's seccomp folder, which every node must have; "" is the
	// runtime's default profile (RuntimeDefault).
	Seccomp string
	// Spec is the template of every pod's container; its Image is filled in.
	Spec confine.Spec
	// Serve, when set, makes the containers whose spec has a Channel serve
	// their stream inside the pod, reached through a relay; the others, and
	// all when it is nil, talk over their attached stdin and stdout.
	Serve *Serve
	// WarmPool, when set, names an agent-sandbox SandboxWarmPool of the
	// namespace: each sandbox is claimed from it (a SandboxClaim) instead
	// of created as a pod, and its template's pod must be [Engine.Template].
	WarmPool string
	Logger   *slog.Logger // nil discards
}

// Serve is how a sandbox process serves its stream inside its pod
// ([confine.ServeFresh]): the variable that gives it the socket's name, and
// the relay command the engine runs in the pod to reach that socket, which
// takes the name as its last argument.
type Serve struct {
	Env   string
	Relay []string
}

// socketName is the abstract unix socket a pod's process serves its stream
// on: in the pod's own network namespace, reachable by nothing outside the
// pod, and not a file that code cleaning /tmp could remove.
const socketName = "codebridge-stream"

// Engine starts sandbox pods on a Kubernetes cluster it connects to on first
// use. Each Engine is a replica: its pods carry its id ([LabelReplica]) and
// its process's ownership labels, and Close deletes them. It knows nothing
// of what runs in the pods.
type Engine struct {
	opts    Options
	log     *slog.Logger
	replica string
	owner   confine.Owner

	connectMu sync.Mutex // serializes connecting

	bg   context.Context // ends with Close
	stop context.CancelFunc
	jobs sync.WaitGroup // the sweep

	live enginekit.Live[*Container] // every pod not yet removed; closed by Close

	mu     sync.Mutex // protects following
	client *Client
	ns     string
}

// NewEngine returns an engine; it does not touch the cluster until used.
func NewEngine(opts Options) *Engine {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bg, stop := context.WithCancel(context.Background())
	return &Engine{
		opts:    opts,
		log:     log,
		replica: randomHex(8),
		owner:   confine.Self(),
		bg:      bg,
		stop:    stop,
	}
}

// connected returns the client and namespace, connecting first if needed:
// it loads the configuration, makes sure the namespace's NetworkPolicy
// exists and starts the sweep.
func (e *Engine) connected(ctx context.Context) (*Client, string, error) {
	if e.live.Closed() {
		return nil, "", enginekit.ErrShutDown
	}
	e.mu.Lock()
	c, ns := e.client, e.ns
	e.mu.Unlock()
	if c != nil {
		return c, ns, nil
	}
	e.connectMu.Lock()
	defer e.connectMu.Unlock()
	e.mu.Lock()
	c, ns = e.client, e.ns
	e.mu.Unlock()
	if c != nil {
		return c, ns, nil
	}
	cfg := e.opts.Config
	if cfg == nil {
		var err error
		if cfg, err = LoadConfig(os.Getenv); err != nil {
			return nil, "", err
		}
	}
	c = NewClient(cfg)
	ns = cmp.Or(e.opts.Namespace, cfg.Namespace, "default")
	if err := ensurePolicy(ctx, c, ns); err != nil {
		c.Close()
		return nil, "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live.Closed() { // under e.mu, so that Close sees e.client if kept
		c.Close()
		return nil, "", enginekit.ErrShutDown
	}
	e.client, e.ns = c, ns
	e.jobs.Go(func() { e.sweepLoop(c, ns) })
	return c, ns, nil
}

// ensurePolicy creates the namespace's NetworkPolicy that denies
// codebridge's pods all traffic, unless it exists; one that exists must
// deny them all traffic as the one codebridge makes does, or no sandbox
// starts. A sandbox does not start without it.
func ensurePolicy(ctx context.Context, c *Client, ns string) error {
	path := "/apis/networking.k8s.io/v1/namespaces/" + url.PathEscape(ns) + "/networkpolicies"
	var have netPolicy
	err := c.api().Do(ctx, requestTimeout, http.MethodGet, path+"/"+networkPolicyName, nil, nil, &have)
	if IsNotFound(err) {
		err = c.api().Do(ctx, requestTimeout, http.MethodPost, path, nil, networkPolicy(ns), nil)
		if isStatus(err, http.StatusConflict) {
			err = nil // another replica made it meanwhile, from this spec
		}
	} else if err == nil {
		if why := have.Spec.permissive(); len(why) > 0 {
			return fmt.Errorf("the NetworkPolicy %s in namespace %s does not deny sandbox pods all traffic: %s; delete it ('kubectl delete networkpolicy -n %s %s') so that codebridge creates its own, or give it codebridge's spec (podSelector matchLabels %s: \"true\", policyTypes Ingress and Egress, no rules)",
				networkPolicyName, ns, strings.Join(why, "; "), ns, networkPolicyName, confine.LabelManaged)
		}
	}
	if err != nil {
		return fmt.Errorf("the NetworkPolicy %s that denies sandbox pods all traffic in namespace %s: %w; codebridge needs get and create on networkpolicies there", networkPolicyName, ns, err)
	}
	return nil
}

// netPolicy is what ensurePolicy reads of a NetworkPolicy.
type netPolicy struct {
	Spec netPolicySpec `json:"spec"`
}

type netPolicySpec struct {
	PodSelector struct {
		MatchLabels      map[string]string `json:"matchLabels"`
		MatchExpressions []json.RawMessage `json:"matchExpressions"`
	} `json:"podSelector"`
	PolicyTypes []string          `json:"policyTypes"`
	Ingress     []json.RawMessage `json:"ingress"`
	Egress      []json.RawMessage `json:"egress"`
}

// permissive says how s lets a sandbox pod through where codebridge's
// policy (networkPolicy) would not; none when it is as strict. Since
// policies only add what they allow, one that selects every sandbox pod
// (or more), applies to both directions and has no rules is as strict.
func (s netPolicySpec) permissive() []string {
	var why []string
	for k, v := range s.PodSelector.MatchLabels {
		if k != confine.LabelManaged || v != "true" {
			why = append(why, fmt.Sprintf("its podSelector requires %s=%s, so it may not select every sandbox pod", k, v))
		}
	}
	if len(s.PodSelector.MatchExpressions) > 0 {
		why = append(why, "its podSelector has matchExpressions, so it may not select every sandbox pod")
	}
	for _, dir := range []string{"Ingress", "Egress"} {
		if !slices.Contains(s.PolicyTypes, dir) {
			why = append(why, fmt.Sprintf("it does not apply to %s (policyTypes %v)", strings.ToLower(dir), s.PolicyTypes))
		}
	}
	if len(s.Ingress) > 0 {
		why = append(why, fmt.Sprintf("it allows ingress (%d rules)", len(s.Ingress)))
	}
	if len(s.Egress) > 0 {
		why = append(why, fmt.Sprintf("it allows egress (%d rules)", len(s.Egress)))
	}
	slices.Sort(why)
	return why
}

// Ready connects if needed and asks the cluster its version; the kubelet
// pulls images, so there is nothing to wait for and w is not used.
func (e *Engine) Ready(ctx context.Context, _ sandbox.Wait) error {
	c, _, err := e.connected(ctx)
	if err != nil {
		return err
	}
	_, err = c.Version(ctx)
	return err
}

// Describe connects if needed and says which cluster answered. Name, Fix
// and Setup are set even with an error.
func (e *Engine) Describe(ctx context.Context) (enginekit.Description, error) {
	// The image is built where Podman runs; a cluster's nodes then take it
	// from a registry they pull from, or scripts/kube.sh load copies it.
	d := enginekit.Description{Name: "Kubernetes", Setup: "codebridge setup",
		Fix: "set KUBECONFIG to the cluster's kubeconfig (or run codebridge in a pod with a service account that may create pods, pods/exec and networkpolicies in its namespace)"}
	c, ns, err := e.connected(ctx)
	var v Version
	if err == nil {
		v, err = c.Version(ctx)
	}
	if err != nil {
		if u, ok := errors.AsType[*UnavailableError](err); ok {
			err = u // its message says what to do, without the wrapping
		}
		return d, err
	}
	d.Version, d.Endpoint = v.GitVersion, c.Server()
	d.Via = fmt.Sprintf("context %q of %s, namespace %s", c.cfg.Context, c.cfg.Source, ns)
	if c.cfg.Context == "in-cluster" {
		d.Via = "the pod's service account, namespace " + ns
	}
	d.Runtime = cmp.Or(e.opts.RuntimeClass, "the cluster's default runtime class")
	return d, nil
}

// Start creates a pod from the engine's spec, waits until its container
// runs and opens its stream: a [*Container]. The kubelet pulls images, so
// there is nothing to wait for and w is not used.
func (e *Engine) Start(ctx context.Context, _ sandbox.Wait) (sandbox.Container, error) {
	b, err := e.start(ctx, e.opts.Spec, nil)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	b.holder = newHolder()
	return b, nil
}

// startOwned is Start with these ownership labels instead of this process's
// (for tests of the sweep).
func (e *Engine) startOwned(ctx context.Context, spec confine.Spec, owner map[string]string) (*Container, error) {
	return e.start(ctx, spec, owner)
}

func (e *Engine) start(ctx context.Context, spec confine.Spec, owner map[string]string) (*Container, error) {
	c, ns, err := e.connected(ctx)
	if err != nil {
		return nil, err
	}
	if e.opts.WarmPool != "" {
		return e.claim(ctx, c, ns)
	}
	if owner == nil {
		owner = e.owner.Labels()
	}
	pod, serve, err := e.pod(spec, owner, "codebridge-"+randomHex(8), ns)
	if err != nil {
		return nil, err
	}
	var created Pod
	if err := c.api().Do(ctx, requestTimeout, http.MethodPost, podsPath(ns), nil, pod, &created); err != nil {
		return nil, fmt.Errorf("creating a sandbox pod in namespace %s: %w", ns, err)
	}
	return e.launch(ctx, &Container{e: e, c: c, ns: ns, name: pod.Metadata.Name, serve: serve}, nil)
}

// launch makes b, just created, one of the engine's live sandboxes, waits
// until its pod runs and opens its stream; find, if set, first finds its
// pod (a claim's). On failure it removes b.
func (e *Engine) launch(ctx context.Context, b *Container, find func(context.Context) error) (*Container, error) {
	if !e.live.Add(b) {
		b.delete(ctx)
		return nil, enginekit.ErrShutDown
	}
	ctx, cancel := context.WithTimeout(ctx, podStartTimeout)
	defer cancel()
	var err error
	if find != nil {
		err = find(ctx)
	}
	if err == nil {
		_, err = waitPod(ctx, b.c, b.ns, b.name, started)
	}
	if err == nil {
		err = b.open(ctx, confine.ServeFresh)
	}
	if err != nil {
		b.Remove(ctx)
		return nil, err
	}
	b.started = time.Now()
	return b, nil
}

// pod is the pod of spec with these ownership labels; serve says whether
// its process serves its stream in the pod.
func (e *Engine) pod(spec confine.Spec, owner map[string]string, name, ns string) (*Pod, bool, error) {
	spec.Image = cmp.Or(spec.Image, e.opts.Image, confine.DefaultImage)
	serve := e.opts.Serve != nil && spec.Channel != ""
	spec.Channel = "" // no host socket: the stream is served in the pod
	h, err := spec.Harden(owner)
	if err != nil {
		return nil, false, err
	}
	o := podOptions{
		Name:         name,
		Namespace:    ns,
		Replica:      e.replica,
		RuntimeClass: e.opts.RuntimeClass,
		PullPolicy:   e.opts.PullPolicy,
		Seccomp:      e.opts.Seccomp,
		Wrap:         wrapLine(h, !serve),
	}
	if serve {
		o.Serve = &envVar{Name: e.opts.Serve.Env, Value: socketName}
	}
	pod, err := newPod(h, o)
	return pod, serve, err
}

// podStartTimeout bounds the wait for a pod's container to run (scheduling,
// and pulling its image where it is not on the node).
const podStartTimeout = 5 * time.Minute

// resume opens a new stream to a sandbox pod that serves its stream in the
// pod ([Serve]), whichever replica started it: the seam by which a session
// continues from another replica. It says how many runs the pod's process
// has served (0 for one that never served a connection, which then waits for
// its first frame as a new one does). The pod is not this engine's: Close
// does not delete it.
func (e *Engine) resume(ctx context.Context, pod string) (*Container, int, error) {
	c, ns, err := e.connected(ctx)
	if err != nil {
		return nil, 0, err
	}
	if e.opts.Serve == nil {
		return nil, 0, errors.New("resuming a sandbox pod needs its stream served in the pod (the socket stream)")
	}
	b := &Container{e: e, c: c, ns: ns, name: pod, serve: true}
	if e.opts.WarmPool != "" {
		// A claimed pod ends with its claim ([LabelClaim]).
		var p Pod
		if err := c.api().Do(ctx, requestTimeout, http.MethodGet, podsPath(ns)+"/"+url.PathEscape(pod), nil, nil, &p); err != nil {
			return nil, 0, fmt.Errorf("sandbox pod %s: %w", pod, err)
		}
		b.claim = p.Metadata.Labels[LabelClaim]
	}
	if err := b.open(ctx, 0); err != nil {
		return nil, 0, err
	}
	b.started = time.Now()
	return b, b.runs, nil
}

// Close ends this replica's pods: it closes their streams and deletes them,
// in one request for all (a deletecollection by [LabelReplica]), and stops
// the sweep. Closing again does nothing.
func (e *Engine) Close(ctx context.Context) error {
	boxes, first := e.live.Close()
	if !first {
		return nil
	}
	e.stop()
	e.mu.Lock() // after e.live.Close: a client kept is seen here ([Engine.connected])
	c, ns := e.client, e.ns
	e.mu.Unlock()
	for _, b := range boxes {
		b.closeStream()
	}
	e.jobs.Wait()
	if c == nil {
		return nil
	}
	defer c.Close()
	q := url.Values{"labelSelector": {LabelReplica + "=" + e.replica}}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	if e.opts.WarmPool != "" {
		// Deleting the claims deletes their sandboxes and pods.
		if err := c.api().Do(dctx, requestTimeout, http.MethodDelete, claimsPath(ns), q, deleteOptions(), nil); err != nil {
			return fmt.Errorf("deleting this replica's sandbox claims: %w", err)
		}
		return nil
	}
	if err := c.api().Do(dctx, requestTimeout, http.MethodDelete, podsPath(ns), q, deleteOptions(), nil); err != nil {
		return fmt.Errorf("deleting this replica's sandbox pods: %w", err)
	}
	return nil
}

// deleteOptions ends a pod at once: its containers are killed with no
// grace (a sandbox needs no graceful stop), in the background.
func deleteOptions() map[string]any {
	return map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0, "propagationPolicy": "Background"}
}

func podsPath(ns string) string { return "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods" }

// Container is a started sandbox pod of an [Engine] with its stream: the
// sandbox.Container of runtime/kube.
type Container struct {
	e       *Engine
	c       *Client
	ns      string
	name    string
	claim   string // the SandboxClaim that holds the pod, if claimed ([Options.WarmPool])
	serve   bool   // the stream is served in the pod, through the relay
	started time.Time
	runs    int    // after Resume: the runs the process had served
	holder  string // this stream's value of labelHolder ([Engine.Adopt]); "" for a pod of startOwned or resume

	killed atomic.Bool // Remove deleted it

	mu      sync.Mutex // protects following
	st      *stream    // set once open; read without mu after Start or Resume returned
	closed  bool       // closeStream was called
	exited  *terminated
	logs    string
	removed bool
	ref     sandbox.HandleRef // the session's, once marked ([Engine.Mark])
}

// open opens the pod's stream: the relay for a pod that serves it, after
// which the process says whether it is fresh or resumed (want, 0 for
// either), else the attach, after which it is told to start.
func (b *Container) open(ctx context.Context, want byte) error {
	var relay []string
	if b.serve {
		relay = append(append([]string{}, b.e.opts.Serve.Relay...), socketName)
	}
	st, err := b.c.openStream(ctx, b.ns, b.name, relay)
	if err != nil {
		return fmt.Errorf("opening the stream of sandbox pod %s: %w", b.name, err)
	}
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	if !b.serve {
		if _, err := st.Write([]byte("\n")); err != nil {
			st.Close()
			return fmt.Errorf("starting sandbox pod %s: %w", b.name, err)
		}
		b.setStream(st)
		return nil
	}
	var hello [1]byte
	if _, err := io.ReadFull(st, hello[:]); err != nil {
		st.Close()
		<-st.Done()
		msg := strings.TrimSpace(st.stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("reaching the interpreter of sandbox pod %s: %s", b.name, msg)
	}
	switch {
	case hello[0] == confine.ServeResumed && want != confine.ServeFresh:
		var n [4]byte
		if _, err := io.ReadFull(st, n[:]); err != nil {
			st.Close()
			return fmt.Errorf("reaching the interpreter of sandbox pod %s: %w", b.name, err)
		}
		b.runs = int(binary.BigEndian.Uint32(n[:]))
	case hello[0] == confine.ServeFresh && want != confine.ServeResumed:
	default:
		st.Close()
		return fmt.Errorf("the interpreter of sandbox pod %s answered %q, not %q", b.name, hello[0], want)
	}
	b.setStream(st)
	return nil
}

// setStream makes st the container's stream, once it is open. The engine's Close
// may run meanwhile: it then closes st at once.
func (b *Container) setStream(st *stream) {
	b.mu.Lock()
	b.st = st
	closed := b.closed
	b.mu.Unlock()
	if closed {
		st.Close()
	}
}

// ID is the pod's name.
func (b *Container) ID() string { return b.name }

// Started is when the pod's stream opened.
func (b *Container) Started() time.Time { return b.started }

// Stream is the pod's stream: the relay's stdin and stdout, or the attached
// container's. Closing it ends the stream; with the relay the pod's process
// keeps its state and waits for the next one (its wait limit ends it), with
// attach its stdin ends.
func (b *Container) Stream() io.ReadWriteCloser { return b.st }

// Done is closed when the stream's output has ended.
func (b *Container) Done() <-chan struct{} { return b.st.Done() }

// Stderr is what the container wrote to stderr, at most 64 KiB: the
// attach's, or the relay's and, once [Container.Exit] has seen the pod end, the
// end of its log.
func (b *Container) Stderr() string {
	b.mu.Lock()
	logs := b.logs
	b.mu.Unlock()
	return b.st.stderr.String() + logs
}

// Exit waits for the pod's container to end and reports its exit code and
// whether it was killed for exceeding its memory limit: the kubelet says
// OOMKilled, or it died of SIGKILL (137) that Remove did not send. It has no
// deadline of its own.
func (b *Container) Exit(ctx context.Context) (code int, oom bool, err error) {
	b.mu.Lock()
	t := b.exited
	b.mu.Unlock()
	if t == nil {
		p, err := waitPod(ctx, b.c, b.ns, b.name, ended)
		if err != nil {
			return -1, false, err
		}
		t = p.sandbox().State.Terminated
		logs := ""
		if b.serve {
			logs = b.tailLog(ctx)
		}
		b.mu.Lock()
		b.exited, b.logs = t, logs
		b.mu.Unlock()
	}
	return t.ExitCode, t.Reason == "OOMKilled" || t.ExitCode == 137 && !b.killed.Load(), nil
}

// tailLog returns the end of the container's log, for diagnostics.
func (b *Container) tailLog(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	q := url.Values{"container": {containerName}, "limitBytes": {"65536"}}
	resp, err := b.c.api().Request(ctx, http.MethodGet, podsPath(b.ns)+"/"+url.PathEscape(b.name)+"/log", q, nil)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return string(data)
}

// Remove closes the stream and deletes the pod (a resumed pod of another
// replica too: the session it held has ended), unless another stream holds
// it now ([Engine.Lost]): then it only closes this one. Removing twice is
// not an error.
func (b *Container) Remove(ctx context.Context) error {
	if b.e.Lost(ctx, b) {
		return b.st.Close()
	}
	b.closeStream()
	b.mu.Lock()
	already := b.removed
	b.removed = true
	b.mu.Unlock()
	b.e.live.Remove(b)
	if already {
		return nil
	}
	b.killed.Store(true)
	return b.delete(ctx)
}

func (b *Container) closeStream() {
	b.mu.Lock()
	st := b.st
	b.closed = true
	b.mu.Unlock()
	if st != nil {
		st.Close()
	}
}

func (b *Container) delete(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	if b.claim != "" {
		err := deleteClaim(ctx, b.c, b.ns, b.claim)
		if err != nil {
			b.e.log.Warn("deleting sandbox claim", "claim", b.claim, "err", err)
		}
		return err
	}
	err := deletePod(ctx, b.c, b.ns, b.name)
	if err != nil {
		b.e.log.Warn("deleting sandbox pod", "pod", b.name, "err", err)
	}
	return err
}

// started is done when the pod's container runs (or has already ended),
// and fails when it cannot start.
func started(p *Pod) (bool, error) {
	for _, c := range p.Status.Conditions {
		if c.Type == "PodScheduled" && c.Status == "False" && c.Reason == "Unschedulable" {
			return false, fmt.Errorf("sandbox pod %s cannot be scheduled: %s", p.Metadata.Name, c.Message)
		}
	}
	if p.Status.Phase == "Failed" {
		return false, fmt.Errorf("sandbox pod %s failed: %s %s", p.Metadata.Name, p.Status.Reason, p.Status.Message)
	}
	cs := p.sandbox()
	if cs == nil {
		return false, nil
	}
	switch {
	case cs.State.Running != nil:
		return true, nil
	case cs.State.Terminated != nil:
		t := cs.State.Terminated
		return false, fmt.Errorf("sandbox pod %s ended as it started (exit code %d, %s): %s", p.Metadata.Name, t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
	case cs.State.Waiting != nil && fatalWaiting[cs.State.Waiting.Reason]:
		w := cs.State.Waiting
		return false, fmt.Errorf("sandbox pod %s cannot start its container (%s): %s", p.Metadata.Name, w.Reason, w.Message)
	}
	return false, nil
}

// fatalWaiting are the reasons a container waits that do not pass by
// themselves.
var fatalWaiting = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// ended is done when the pod's container has ended.
func ended(p *Pod) (bool, error) {
	cs := p.sandbox()
	if cs != nil && cs.State.Terminated != nil {
		return true, nil
	}
	if p.Status.Phase == "Failed" && cs == nil {
		return false, fmt.Errorf("sandbox pod %s failed before its container ran: %s %s", p.Metadata.Name, p.Status.Reason, p.Status.Message)
	}
	return false, nil
}

// errPodGone is why a wait ended: the pod was deleted.
var errPodGone = errors.New("the sandbox pod was deleted")

// waitPod waits until done says the pod is as wanted, following its
// changes with a watch (GET, then watch from that version; again when the
// watch times out or its version expired).
func waitPod(ctx context.Context, c *Client, ns, name string, done func(*Pod) (bool, error)) (*Pod, error) {
	return waitObject(ctx, c, podsPath(ns), "pod", name, errPodGone, done)
}

// waitObject waits until done says the object name of the collection at
// path (a what, for messages) is as wanted, following its changes with a
// watch. It fails with gone when the object is deleted.
func waitObject[T any](ctx context.Context, c *Client, path, what, name string, gone error, done func(*T) (bool, error)) (*T, error) {
	for {
		var raw json.RawMessage
		if err := c.api().Do(ctx, requestTimeout, http.MethodGet, path+"/"+url.PathEscape(name), nil, nil, &raw); err != nil {
			if IsNotFound(err) {
				return nil, fmt.Errorf("%s %s: %w", what, name, gone)
			}
			return nil, err
		}
		o, rv, err := decodeObject[T](raw)
		if err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", what, name, err)
		}
		if ok, err := done(o); ok || err != nil {
			return o, err
		}
		got, err := watchObject(ctx, c, path, what, name, rv, gone, done)
		if got != nil || err != nil {
			return got, err
		}
	}
}

// decodeObject decodes an object and its resourceVersion.
func decodeObject[T any](raw []byte) (*T, string, error) {
	var o T
	var meta struct {
		Metadata objectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, "", err
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, "", err
	}
	return &o, meta.Metadata.ResourceVersion, nil
}

// watchObject follows the object's changes from version rv until done says
// so. It returns nil, nil when the watch ends without an answer.
func watchObject[T any](ctx context.Context, c *Client, path, what, name, rv string, gone error, done func(*T) (bool, error)) (*T, error) {
	wctx, cancel := context.WithTimeout(ctx, watchTimeout+30*time.Second)
	defer cancel()
	q := url.Values{
		"watch":           {"true"},
		"fieldSelector":   {"metadata.name=" + name},
		"resourceVersion": {rv},
		"timeoutSeconds":  {fmt.Sprint(int(watchTimeout.Seconds()))},
	}
	resp, err := c.api().Request(wctx, http.MethodGet, path, q, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("waiting for %s %s: %w", what, name, ctx.Err())
			}
			return nil, nil // the watch timed out: GET and watch again
		}
		switch ev.Type {
		case "ADDED", "MODIFIED":
			o, _, err := decodeObject[T](ev.Object)
			if err != nil {
				return nil, fmt.Errorf("watching %s %s: %w", what, name, err)
			}
			if ok, err := done(o); ok || err != nil {
				return o, err
			}
		case "DELETED":
			return nil, fmt.Errorf("%s %s: %w", what, name, gone)
		default: // ERROR (e.g. the version expired), BOOKMARK
			return nil, nil
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// HasImage reports whether a node of the cluster lists the image among
// those it holds (a node lists its 50 largest). Where codebridge may not
// list nodes (its role is namespaced), it cannot tell and says yes: the
// pod's start then says what is missing.
func (e *Engine) HasImage(ctx context.Context, image string) (bool, error) {
	c, _, err := e.connected(ctx)
	if err != nil {
		return false, err
	}
	var nodes struct {
		Items []struct {
			Status struct {
				Images []struct {
					Names []string `json:"names"`
				} `json:"images"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := c.api().Do(ctx, requestTimeout, http.MethodGet, "/api/v1/nodes", nil, nil, &nodes); err != nil {
		if isStatus(err, http.StatusForbidden) {
			return true, nil
		}
		return false, err
	}
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if name == image || name == "docker.io/"+image || name == "docker.io/library/"+image {
					return true, nil
				}
			}
		}
	}
	return false, nil
}
