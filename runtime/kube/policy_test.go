package kube

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fakePolicyAPI answers the NetworkPolicy requests of ensurePolicy as an API
// server does: existing is the policy it holds ("" for none, then a POST
// creates it), and created counts the POSTs.
func fakePolicyAPI(t *testing.T, existing string) (*Client, *atomic.Int32) {
	t.Helper()
	var created atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/"+networkPolicyName:
			if existing == "" {
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"kind":"Status","status":"Failure","reason":"NotFound","code":404}`)
				return
			}
			io.WriteString(w, existing)
		case r.Method == http.MethodPost && r.URL.Path == "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies":
			created.Add(1)
			body, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusCreated)
			w.Write(body)
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return NewClient(&Config{Server: srv.URL, Token: func() (string, error) { return "tok", nil }, Source: "test"}), &created
}

// TestEnsurePolicy: the NetworkPolicy codebridge relies on is created when
// missing, accepted when it denies the sandbox pods all traffic as the one
// codebridge makes does, and refused, with what differs and how to fix it,
// when it is more permissive.
func TestEnsurePolicy(t *testing.T) {
	ours, err := json.Marshal(networkPolicy("ns"))
	if err != nil {
		t.Fatal(err)
	}
	withSpec := func(spec string) string {
		return `{"kind":"NetworkPolicy","metadata":{"name":"` + networkPolicyName + `","namespace":"ns"},"spec":` + spec + `}`
	}
	tests := []struct {
		name     string
		existing string
		wantErr  string // "" for accepted
		created  int32
	}{
		{name: "missing", created: 1},
		{name: "ours", existing: string(ours)},
		{name: "every pod", existing: withSpec(`{"podSelector":{},"policyTypes":["Egress","Ingress"]}`)},
		{name: "egress allowed", existing: withSpec(`{"podSelector":{"matchLabels":{"io.codebridge.managed":"true"}},"policyTypes":["Ingress","Egress"],"egress":[{}]}`), wantErr: "allows egress"},
		{name: "ingress allowed", existing: withSpec(`{"podSelector":{"matchLabels":{"io.codebridge.managed":"true"}},"policyTypes":["Ingress","Egress"],"ingress":[{"from":[{"podSelector":{}}]}]}`), wantErr: "allows ingress"},
		{name: "ingress only", existing: withSpec(`{"podSelector":{"matchLabels":{"io.codebridge.managed":"true"}},"policyTypes":["Ingress"]}`), wantErr: "does not apply to egress"},
		{name: "narrower selector", existing: withSpec(`{"podSelector":{"matchLabels":{"io.codebridge.managed":"true","app":"x"}},"policyTypes":["Ingress","Egress"]}`), wantErr: "podSelector"},
		{name: "other pods", existing: withSpec(`{"podSelector":{"matchLabels":{"app":"x"}},"policyTypes":["Ingress","Egress"]}`), wantErr: "podSelector"},
		{name: "expressions", existing: withSpec(`{"podSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["x"]}]},"policyTypes":["Ingress","Egress"]}`), wantErr: "podSelector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.existing != "" && !strings.Contains(string(ours), `"io.codebridge.managed"`) {
				t.Fatalf("the test's policies assume the label io.codebridge.managed; ours is %s", ours)
			}
			c, created := fakePolicyAPI(t, tt.existing)
			err := ensurePolicy(t.Context(), c, "ns")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ensurePolicy: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "kubectl delete networkpolicy") {
				t.Fatalf("ensurePolicy: %v; want a refusal containing %q and how to fix it", err, tt.wantErr)
			}
			if n := created.Load(); n != tt.created {
				t.Errorf("%d policies created, want %d", n, tt.created)
			}
		})
	}
}
