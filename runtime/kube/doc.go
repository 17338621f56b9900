// Package kube is the Kubernetes engine driver, whose [Engine] is a
// runtime/sandbox Engine and Adopter: each sandbox is a pod, made
// from runtime/confine's spec, on a cluster reached through its REST API
// with the standard library (no client-go: see docs/kubernetes.md), and
// configured from KUBECONFIG's current context or a pod's service account.
//
// A pod's stream runs through the API server over WebSocket (the
// channel.k8s.io subprotocols of exec and attach). Where the sandbox's
// process serves its stream inside the pod ([Serve], [confine.ServeFresh]),
// the engine reaches it by running a relay in the pod, so a stream that
// dies with its replica loses nothing but itself: any replica may adopt the
// pod ([Engine.Adopt], by the labels [Engine.Mark] puts on it), open a new
// stream and find the interpreter's state as it was.
// Other commands talk over their attached stdin and stdout.
//
// Pods carry runtime/confine's labels (as labels where Kubernetes accepts
// the value, and as annotations) and [LabelReplica], the id of the engine
// that made them; a NetworkPolicy denies them all traffic. An engine's
// Close deletes its pods, and every engine sweeps what no replica will
// delete (ended pods, and pods of codebridge processes of its host that
// have exited). Its set of live pods, which closes once, is runtime/enginekit's
// [enginekit.Live], as every driver's is; the rest of runtime/enginekit's life
// cycle (exit turns, the image job, reconnecting to a local engine) has no
// counterpart on a cluster.
package kube
