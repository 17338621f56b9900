// Package tasks keeps the tasks of MCP's tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663): a tool call answered with a
// task handle at once, whose state and result the client fetches later
// with tasks/get, answers questions of with tasks/update, and stops with
// tasks/cancel. A [Store] holds the tasks of one codebridge, each visible
// only to the principal that created it, bounded in number and forgotten a
// while after it ends; a [Job] is the work behind a task, which the store
// asks for its state whenever a client does. The wire types of the
// extension's methods are here too.
package tasks

import (
	"crypto/rand"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension is the identifier of MCP's tasks extension.
const Extension = "io.modelcontextprotocol/tasks"

// The methods of the extension.
const (
	MethodGet    = "tasks/get"
	MethodUpdate = "tasks/update"
	MethodCancel = "tasks/cancel"
)

// Status is a task's state, as the extension names it.
type Status string

// The statuses; the last three are terminal.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is a final status.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// State is a job's state at one moment.
type State struct {
	Status  Status
	Message string              // a line about the state for the person or model; may be empty
	Inputs  mcp.InputRequestMap // the questions outstanding, when InputRequired
	Result  *mcp.CallToolResult // when Completed
	Error   *jsonrpc.Error      // when Failed
	Ended   time.Time           // when it reached a terminal status
}

// A Job is the work behind a task.
type Job interface {
	// State is the job's state now.
	State() State
	// Answer hands the client's answers to the job's outstanding
	// questions; answers to questions not outstanding are ignored.
	Answer(mcp.InputResponseMap)
	// Cancel asks the job to stop; the job reports Cancelled once it has.
	Cancel()
}

// ErrNotFound is a task id that names no task of the caller's: unknown,
// expired, or another principal's (the three read alike).
var ErrNotFound = errors.New("task not found")

// ErrFull is a task refused because the store holds its most.
var ErrFull = errors.New("too many tasks kept")

// PollInterval is the polling interval a task suggests to its client.
const PollInterval = time.Second

// Store holds tasks: at most max at once, each forgotten ttl after it ends
// (on the next call to the store after that).
type Store struct {
	max int
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex // protects following
	tasks map[string]*Task
}

// NewStore returns a store of at most max tasks, each kept ttl after it
// ends.
func NewStore(max int, ttl time.Duration) *Store {
	return &Store{max: max, ttl: ttl, now: time.Now, tasks: map[string]*Task{}}
}

// Task is one task: a job, its owner, and when it was created.
type Task struct {
	ID      string
	owner   string
	created time.Time
	job     Job
}

// Create makes a task of job for owner, or returns [ErrFull] when the store
// holds its most: a task is kept its whole ttl (the extension forbids
// forgetting it sooner), so one more waits until one has expired.
func (s *Store) Create(owner string, job Job) (*Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	if len(s.tasks) >= s.max {
		return nil, ErrFull
	}
	t := &Task{ID: rand.Text(), owner: owner, created: now, job: job}
	s.tasks[t.ID] = t
	return t, nil
}

// sweep forgets the tasks that ended more than ttl before now.
func (s *Store) sweep(now time.Time) {
	for id, t := range s.tasks {
		if st := t.job.State(); st.Status.Terminal() && now.Sub(st.Ended) > s.ttl {
			delete(s.tasks, id)
		}
	}
}

// find returns owner's task id, or [ErrNotFound].
func (s *Store) find(owner, id string) (*Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(s.now())
	t := s.tasks[id]
	if t == nil || t.owner != owner {
		return nil, ErrNotFound
	}
	return t, nil
}

// Len is the number of tasks held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tasks)
}

// Get is the state of owner's task id.
func (s *Store) Get(owner, id string) (*GetResult, error) {
	t, err := s.find(owner, id)
	if err != nil {
		return nil, err
	}
	return s.detailed(t, t.job.State()), nil
}

// Update hands answers to owner's task id.
func (s *Store) Update(owner, id string, answers mcp.InputResponseMap) error {
	t, err := s.find(owner, id)
	if err != nil {
		return err
	}
	t.job.Answer(answers)
	return nil
}

// Cancel asks owner's task id to stop; a task that has ended stays as it
// ended.
func (s *Store) Cancel(owner, id string) error {
	t, err := s.find(owner, id)
	if err != nil {
		return err
	}
	t.job.Cancel()
	return nil
}

// Created is the result that hands t to its client.
func (s *Store) Created(t *Task) *CreateResult {
	return &CreateResult{ResultType: "task", Info: s.info(t, t.job.State())}
}

// detailed is t in state st, with what the status carries.
func (s *Store) detailed(t *Task, st State) *GetResult {
	r := &GetResult{ResultType: "complete", Info: s.info(t, st)}
	switch st.Status {
	case InputRequired:
		r.InputRequests = st.Inputs
	case Completed:
		r.Result = st.Result
	case Failed:
		r.Error = st.Error
	}
	return r
}

// info is t's metadata in state st. Its time to live runs from the end of
// the task (from now while it works), so it grows until the task ends.
func (s *Store) info(t *Task, st State) Info {
	now := s.now()
	last := now
	if st.Status.Terminal() {
		last = st.Ended
	}
	ttl := last.Add(s.ttl).Sub(t.created).Milliseconds()
	return Info{
		TaskID: t.ID, Status: st.Status, StatusMessage: st.Message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: last.UTC().Format(time.RFC3339Nano),
		TTLMs: &ttl, PollIntervalMs: PollInterval.Milliseconds(),
	}
}

// Info is a task's metadata on the wire (the extension's Task).
type Info struct {
	TaskID        string `json:"taskId"`
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is how long after its creation the task is kept, in
	// milliseconds; nil (null) would be unlimited.
	TTLMs          *int64 `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

// CreateResult answers a call that became a task (resultType "task").
type CreateResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Info
}

// GetResult answers tasks/get: the task, with its questions, result or
// error as its status has them.
type GetResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Info
	InputRequests mcp.InputRequestMap `json:"inputRequests,omitempty"`
	Result        *mcp.CallToolResult `json:"result,omitempty"`
	Error         *jsonrpc.Error      `json:"error,omitempty"`
}

// AckResult answers tasks/update and tasks/cancel: an empty acknowledgement.
type AckResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// Ack is an acknowledgement.
func Ack() *AckResult { return &AckResult{ResultType: "complete"} }

// GetParams are the parameters of tasks/get and tasks/cancel.
type GetParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// UpdateParams are the parameters of tasks/update.
type UpdateParams struct {
	mcp.ParamsBase
	TaskID         string               `json:"taskId"`
	InputResponses mcp.InputResponseMap `json:"inputResponses"`
}
