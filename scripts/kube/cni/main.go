// Command cni is the network plugin of the cluster that scripts/kube.sh runs:
// a CNI plugin that gives a pod no network at all.
//
// The cluster runs on 127.0.0.1 with no pod network, as codebridge's sandboxes
// need none. containerd 1.6 still insists on a pod address on eth0 in the CNI
// result ("failed to find network info for sandbox" otherwise), so for ADD this
// plugin creates nothing and reports eth0 as 127.0.0.2/8. The pod's network
// namespace keeps only the loopback interface that the standard loopback plugin
// brings up: connecting anywhere else fails at once (ENETUNREACH). DEL, CHECK,
// GC and STATUS have nothing to do. It reads the network configuration on stdin
// and the CNI_* variables, as the CNI specification (1.0) describes, and uses
// only the standard library.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// podAddress is the address reported for eth0: loopback, never routed.
const podAddress = "127.0.0.2/8"

var supportedVersions = []string{"0.3.0", "0.3.1", "0.4.0", "1.0.0"}

// netConf is the part of the network configuration the plugin reads.
type netConf struct {
	CNIVersion string `json:"cniVersion"`
}

type iface struct {
	Name    string `json:"name"`
	Sandbox string `json:"sandbox,omitempty"`
}

type ipConfig struct {
	Address   string `json:"address"`
	Interface int    `json:"interface"`
	// Version is required by results of CNI 0.3.x only.
	Version string `json:"version,omitempty"`
}

type result struct {
	CNIVersion string     `json:"cniVersion"`
	Interfaces []iface    `json:"interfaces"`
	IPs        []ipConfig `json:"ips"`
}

type versionResult struct {
	CNIVersion        string   `json:"cniVersion"`
	SupportedVersions []string `json:"supportedVersions"`
}

// cniError is the error a plugin prints on stdout, with a non-zero exit.
type cniError struct {
	CNIVersion string `json:"cniVersion"`
	Code       int    `json:"code"`
	Msg        string `json:"msg"`
}

func main() {
	out, err := run(os.Getenv("CNI_COMMAND"), os.Getenv("CNI_NETNS"), os.Getenv("CNI_IFNAME"), os.Stdin)
	if err != nil {
		// Code 100 and up are the plugin's own errors in the CNI specification.
		out = cniError{CNIVersion: "1.0.0", Code: 100, Msg: err.Error()}
	}
	if out != nil {
		if encErr := json.NewEncoder(os.Stdout).Encode(out); encErr != nil {
			fmt.Fprintln(os.Stderr, "cni:", encErr)
			os.Exit(1)
		}
	}
	if err != nil {
		os.Exit(1)
	}
}

// run answers one CNI command; a nil result prints nothing.
func run(command, netns, ifname string, stdin io.Reader) (any, error) {
	switch command {
	case "VERSION":
		return versionResult{CNIVersion: "1.0.0", SupportedVersions: supportedVersions}, nil
	case "DEL", "CHECK", "GC", "STATUS":
		return nil, nil
	case "ADD":
	default:
		return nil, fmt.Errorf("unknown CNI_COMMAND %q: want ADD, DEL, CHECK, GC, STATUS or VERSION", command)
	}
	var conf netConf
	if err := json.NewDecoder(stdin).Decode(&conf); err != nil {
		return nil, fmt.Errorf("reading the network configuration on stdin: %w", err)
	}
	version := conf.CNIVersion
	if version == "" {
		version = "0.3.0"
	}
	res := result{
		CNIVersion: version,
		Interfaces: []iface{{Name: ifname, Sandbox: netns}},
		IPs:        []ipConfig{{Address: podAddress, Interface: 0}},
	}
	if version == "0.3.0" || version == "0.3.1" {
		res.IPs[0].Version = "4"
	}
	return res, nil
}
