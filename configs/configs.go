// Package configs holds the files that build codebridge's sandbox image, so
// the binary can build it without a checkout (codebridge setup):
// Containerfile for machines that reach a container registry, and
// sandbox-image.sh, which both routes run inside a Debian bookworm root.
package configs

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
)

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

// InputsLabel is the image label that holds [Inputs] of the files an image
// was built from.
const InputsLabel = "io.codebridge.sandbox.inputs"

// Inputs is a short hash of everything a sandbox image of variant is built
// from here: the Containerfile, the image script and the variant. codebridge
// setup labels the images it builds with it and builds again when the label
// differs, so a machine that is reused gets the image today's files make.
func Inputs(variant string) string {
	h := sha256.New()
	for _, b := range [][]byte{Containerfile, SandboxImageScript, []byte(variant)} {
		fmt.Fprintf(h, "%d\n", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
