#!/usr/bin/env bash
# Prepares this machine to run codebridge: `codebridge setup --yes --engine podman`,
# built from this checkout. It installs Podman (with runc and catatonit) when missing,
# builds the sandbox image (the data image localhost/codebridge-sandbox:latest,
# or the image MCP_BRIDGE_IMAGE names), and fixes Podman's runtime and rlimit
# defaults only where a probe container fails. Safe to run again: each step is
# skipped when already done. Extra arguments go to codebridge setup (see
# `go run ./cmd/codebridge setup --help`), e.g. --rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || { echo "setup: Go is missing: install Go 1.26 or newer (https://go.dev/dl/)" >&2; exit 1; }
# The engine is Podman unless one is named (--engine, or MCP_BRIDGE_ENGINE other
# than auto), whatever Docker the machine has: setup's own auto would take a
# Docker whose daemon's socket or DOCKER_HOST it finds.
engine=(--engine podman)
case " $* " in *" --engine "*|*" --engine="*) engine=() ;; esac
case ${MCP_BRIDGE_ENGINE:-auto} in auto) ;; *) engine=() ;; esac
exec go run ./cmd/codebridge setup --yes "${engine[@]}" "$@"
