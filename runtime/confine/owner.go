package confine

import (
	"os"
	"strconv"
	"strings"
)

// Owner is a codebridge process as the owner of the containers it creates:
// its labels ([LabelOwner], [LabelOwnerStart]) tell the sweep of the next
// codebridge on the host whether the process still runs.
type Owner struct {
	Host  string
	PID   int
	Start string // process start time ([ProcessStart]); "" unknown
}

// Self is this process as an [Owner].
func Self() Owner {
	host, _ := os.Hostname()
	o := Owner{Host: host, PID: os.Getpid()}
	o.Start, _ = ProcessStart(o.PID)
	return o
}

// ID is the value of [LabelOwner]: "hostname/pid".
func (o Owner) ID() string { return o.Host + "/" + strconv.Itoa(o.PID) }

// Labels are the ownership labels of o's containers.
func (o Owner) Labels() map[string]string {
	labels := map[string]string{LabelOwner: o.ID()}
	if o.Start != "" {
		labels[LabelOwnerStart] = o.Start
	}
	return labels
}

// Stale reports whether a container with these labels belongs to a
// codebridge process on o's host that has exited; o is this process.
func (o Owner) Stale(labels map[string]string) bool {
	host, pidStr, ok := strings.Cut(labels[LabelOwner], "/")
	if !ok || host != o.Host {
		return false
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return false
	}
	start := labels[LabelOwnerStart]
	if pid == o.PID {
		// Ours, unless an earlier process had our pid.
		return start != "" && start != o.Start
	}
	if !ProcessAlive(pid) {
		return true
	}
	if start == "" {
		return false
	}
	cur, ok := ProcessStart(pid)
	return ok && cur != start
}
