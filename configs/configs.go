// Package configs holds the files that build codebridge's sandbox image, so
// the binary can build it without a checkout (codebridge setup):
// Containerfile for machines that reach a container registry, and
// sandbox-image.sh, which both routes run inside a Debian bookworm root.
package configs

import _ "embed"

// Containerfile builds the sandbox image from debian:bookworm-slim; its build
// context needs [SandboxImageScript] as sandbox-image.sh.
//
//go:embed Containerfile
var Containerfile []byte

// SandboxImageScript turns a Debian bookworm root into a sandbox image. Its
// one argument is the variant, data or minimal.
//
//go:embed sandbox-image.sh
var SandboxImageScript []byte
