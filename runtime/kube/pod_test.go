package kube

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// TestPodHardening checks, field by field, what a sandbox pod gets from
// confine's hardened spec; the cluster tests probe the same from inside.
func TestPodHardening(t *testing.T) {
	h, err := confine.Spec{
		Image:   "localhost/img:1",
		Command: []string{"python3", "-c", "pass"},
		Env:     map[string]string{"B": "2", "A": "1"},
		Memory:  256 << 20,
		CPUs:    1.5,
		TmpSize: 8 << 20,
		Labels:  map[string]string{"io.codebridge.test": "yes"},
	}.Harden(confine.Owner{Host: "host", PID: 42, Start: "123"}.Labels())
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPod(h, podOptions{
		Name: "codebridge-x", Namespace: "ns", Replica: "r1", RuntimeClass: "gvisor", PullPolicy: "Never",
		Wrap: wrapLine(h, false), Serve: &envVar{"CODEBRIDGE_SERVE", socketName},
	})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(p)
	var got map[string]any
	json.Unmarshal(data, &got)
	at := func(path string) any {
		var v any = got
		for _, k := range strings.Split(path, "/") {
			switch x := v.(type) {
			case map[string]any:
				v = x[k]
			case []any:
				v = x[0]
				if m, ok := v.(map[string]any); ok {
					v = m[k]
				}
			}
		}
		return v
	}
	checks := []struct {
		path string
		want any
	}{
		{"spec/restartPolicy", "Never"},
		{"spec/automountServiceAccountToken", false},
		{"spec/enableServiceLinks", false},
		{"spec/shareProcessNamespace", true},
		{"spec/runtimeClassName", "gvisor"},
		{"spec/terminationGracePeriodSeconds", 1.0},
		{"spec/securityContext/runAsNonRoot", true},
		{"spec/securityContext/runAsUser", 65534.0},
		{"spec/securityContext/runAsGroup", 65534.0},
		{"spec/securityContext/seccompProfile/type", "RuntimeDefault"},
		{"spec/containers/image", "localhost/img:1"},
		{"spec/containers/imagePullPolicy", "Never"},
		{"spec/containers/workingDir", "/work"},
		{"spec/containers/stdin", nil}, // served in the pod: no attach
		{"spec/containers/securityContext/allowPrivilegeEscalation", false},
		{"spec/containers/securityContext/readOnlyRootFilesystem", true},
		{"spec/containers/resources/limits/memory", "268435456"},
		{"spec/containers/resources/limits/cpu", "1500m"},
		{"spec/containers/resources/requests/memory", "268435456"},
		{"spec/containers/resources/requests/cpu", cpuRequest},
		{"metadata/labels/" + LabelReplica, "r1"},
		{"metadata/labels/" + confine.LabelManaged, "true"},
		{"metadata/labels/" + confine.LabelOwnerStart, "123"},
		{"metadata/labels/" + confine.LabelOwner, nil}, // "host/42" is no label value
		{"metadata/annotations/" + confine.LabelOwner, "host/42"},
		{"metadata/annotations/" + annotationServe, "true"},
	}
	for _, c := range checks {
		if g := at(c.path); g != c.want {
			t.Errorf("%s = %#v, want %#v", c.path, g, c.want)
		}
	}
	ct := p.Spec.Containers[0]
	if d := ct.SecurityContext.Capabilities.Drop; len(d) != 1 || d[0] != "ALL" {
		t.Errorf("capabilities drop %v, want [ALL]", d)
	}
	wantVols := map[string]string{"/tmp": "8388608", "/work": "67108864"}
	for _, m := range ct.VolumeMounts {
		var v *volume
		for i := range p.Spec.Volumes {
			if p.Spec.Volumes[i].Name == m.Name {
				v = &p.Spec.Volumes[i]
			}
		}
		if v == nil || v.EmptyDir == nil || v.EmptyDir.Medium != "Memory" || v.EmptyDir.SizeLimit != wantVols[m.MountPath] {
			t.Errorf("volume at %s: %+v, want a memory emptyDir of %s", m.MountPath, v, wantVols[m.MountPath])
		}
		delete(wantVols, m.MountPath)
	}
	if len(wantVols) > 0 {
		t.Errorf("volumes not mounted: %v", wantVols)
	}
	var nproc uint64
	for _, r := range h.Rlimits {
		if r.Type == "nproc" {
			nproc = r.Hard
		}
	}
	if want := []string{"/bin/sh", "-c", fmt.Sprintf("ulimit -S -n 1024 && ulimit -H -n 1024 && ulimit -S -p %d && ulimit -H -p %d && exec \"$0\" \"$@\"", nproc, nproc), "python3", "-c", "pass"}; strings.Join(ct.Command, "|") != strings.Join(want, "|") {
		t.Errorf("command %q, want %q", ct.Command, want)
	}
	env := map[string]string{}
	for _, e := range ct.Env {
		env[e.Name] = e.Value
	}
	if env["A"] != "1" || env["HOME"] != "/tmp" || env["CODEBRIDGE_SERVE"] != socketName {
		t.Errorf("env %v", env)
	}

	if _, err := newPod(confine.Hardened{User: "0:0", Command: []string{"x"}}, podOptions{}); err == nil {
		t.Error("a root pod was made")
	}
}

func TestWrapLineAttach(t *testing.T) {
	h, _ := confine.Spec{Image: "i", Command: []string{"x"}}.Harden(nil)
	if l := wrapLine(h, true); !strings.HasSuffix(l, `IFS= read -r _ && "$0" "$@"`) {
		t.Errorf("attach wrapper %q does not wait for its go line", l)
	}
}
