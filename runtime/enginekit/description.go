package enginekit

// Description is what a driver's Describe says of the engine that answered
// (runtime/podman's, runtime/docker's and runtime/kube's), for codebridge
// doctor and codebridge servers.
type Description struct {
	Name     string // the engine, as people call it: "Podman"
	Version  string // the version of its API
	Endpoint string // where it answered: a URI
	Via      string // how codebridge reached it, e.g. "a Podman API socket"
	Runtime  string // the OCI runtime sandboxes run under; "" when the driver does not say
	// SharesFiles says that the engine reads this host's files, so a sandbox
	// may talk over a unix socket ([confine.Channel]).
	SharesFiles bool
	// Fix is what to do when the engine does not answer.
	Fix string
	// Setup is the command that prepares the engine and builds its images.
	Setup string
}
