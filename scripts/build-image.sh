#!/usr/bin/env bash
# Builds a codebridge sandbox image from Debian packages, with no container
# registry: debootstrap a minimal bookworm with python3, run
# configs/sandbox-image.sh in it (apt-get installs the variant's packages, then
# what a sandbox never needs is trimmed), check that python3 works as nobody,
# then `podman import` the tree. Two variants:
#
#   scripts/build-image.sh                                   # data: localhost/codebridge-sandbox:latest
#   CODEBRIDGE_IMAGE_VARIANT=minimal scripts/build-image.sh  # minimal: localhost/codebridge-sandbox:minimal
#
# data     python3 with numpy, pandas, matplotlib (headless, Agg), scipy,
#          scikit-learn, Pillow and tzdata, from Debian's packages. The default.
# minimal  python3 and its standard library only.
#
# Use the minimal one with MCP_BRIDGE_IMAGE=localhost/codebridge-sandbox:minimal.
# CODEBRIDGE_IMAGE_NAME overrides the image name, CODEBRIDGE_DEBIAN_MIRROR the
# Debian mirror (default: the one in this machine's apt sources). Skipped when
# the image exists and was built as the same variant, unless FORCE=1.
#
# People with registry access can instead build the data image with:
#   podman build -t localhost/codebridge-sandbox:latest -f configs/Containerfile configs
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

VARIANT=${CODEBRIDGE_IMAGE_VARIANT:-data}
case $VARIANT in
  data) default_image=localhost/codebridge-sandbox:latest ;;
  minimal) default_image=localhost/codebridge-sandbox:minimal ;;
  *) printf 'build-image: CODEBRIDGE_IMAGE_VARIANT=%s: want data or minimal\n' "$VARIANT" >&2; exit 2 ;;
esac
IMAGE=${CODEBRIDGE_IMAGE_NAME:-$default_image}
SUITE=${CODEBRIDGE_DEBIAN_SUITE:-bookworm}

log() { printf 'build-image: %s\n' "$*" >&2; }

if [ "${FORCE:-0}" != 1 ] && podman image exists "$IMAGE" 2>/dev/null; then
  built=$(podman image inspect --format '{{index .Config.Labels "io.codebridge.sandbox.variant"}}' "$IMAGE" 2>/dev/null || true)
  if [ "$built" = "$VARIANT" ]; then
    log "$IMAGE already exists (FORCE=1 rebuilds it)"
    exit 0
  fi
  log "$IMAGE exists but is not the $VARIANT variant (it is '${built:-unlabelled}'): rebuilding"
fi

for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { log "$tool is missing: run scripts/setup.sh first"; exit 1; }
done

# Use the Debian mirror this machine already trusts.
mirror=${CODEBRIDGE_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
    grep -v security | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//' |
    awk 'NR==1{print $1}' || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}

rootfs=$(mktemp -d "${TMPDIR:-/tmp}/codebridge-rootfs.XXXXXX")
chmod 755 "$rootfs" # it becomes the image's /, which mktemp made private to root
trap 'rm -rf "$rootfs" "$rootfs.log"' EXIT
# Runs a command inside the tree being built, its output kept out of the way
# unless it fails.
in_root() {
  chroot "$rootfs" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@" >>"$rootfs.log" 2>&1 || {
    tail -20 "$rootfs.log" >&2; log "failed: $*"; exit 1; }
}

log "debootstrap $SUITE from $mirror (about 40 s on an idle machine)"
debootstrap --variant=minbase --include=python3 "$SUITE" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
  tail -20 "$rootfs.log" >&2; exit 1; }

log "running configs/sandbox-image.sh $VARIANT in it (data: a few minutes)"
cp "$repo/configs/sandbox-image.sh" "$rootfs/tmp/sandbox-image.sh"
in_root bash /tmp/sandbox-image.sh "$VARIANT"
rm "$rootfs/tmp/sandbox-image.sh"
# Forget the build host's resolver and name, which debootstrap copied.
: >"$rootfs/etc/resolv.conf"
echo sandbox >"$rootfs/etc/hostname"

# Prove the tree works before importing it: import everything as nobody,
# and draw a PNG through matplotlib's Agg backend.
smoke='print("python", __import__("sys").version.split()[0])'
if [ "$VARIANT" = data ]; then
  smoke='
import os, tempfile
import numpy, pandas, scipy.stats, scipy.optimize, scipy.signal, sklearn.linear_model, sklearn.ensemble
import PIL.Image, matplotlib
import matplotlib.pyplot as plt
assert matplotlib.get_backend().lower() == "agg", matplotlib.get_backend()
fig, ax = plt.subplots(figsize=(2, 2))
ax.plot(pandas.Series(numpy.arange(5)).cumsum())
path = os.path.join(tempfile.mkdtemp(), "smoke.png")
fig.savefig(path)
assert PIL.Image.open(path).size == (200, 200)
print("numpy", numpy.__version__, "pandas", pandas.__version__, "matplotlib", matplotlib.__version__)'
fi
smoke_tmp=$(mktemp -d "$rootfs/tmp/smoke.XXXXXX") && chmod 1777 "$smoke_tmp"
chroot --userspec=65534:65534 "$rootfs" env -i PATH=/usr/bin:/bin HOME="${smoke_tmp#"$rootfs"}" \
  TMPDIR="${smoke_tmp#"$rootfs"}" MPLCONFIGDIR="${smoke_tmp#"$rootfs"}/matplotlib" MPLBACKEND=Agg \
  python3 -I -c "$smoke" >&2 || { log "the $VARIANT image's python3 fails the smoke test above"; exit 1; }
rm -rf "$smoke_tmp"

log "importing as $IMAGE"
changes=(--change 'CMD ["python3"]' --change 'WORKDIR /work'
  --change 'ENV PYTHONDONTWRITEBYTECODE=1'
  --change 'LABEL io.codebridge.sandbox=1' --change "LABEL io.codebridge.sandbox.variant=$VARIANT")
if [ "$VARIANT" = data ]; then
  changes+=(--change 'ENV MPLBACKEND=Agg' --change 'ENV MPLCONFIGDIR=/tmp/matplotlib')
fi
tar -C "$rootfs" -c . | podman import --quiet "${changes[@]}" - "$IMAGE" >/dev/null
podman image exists "$IMAGE"
log "done: $IMAGE ($VARIANT), $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
