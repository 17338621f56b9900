#!/usr/bin/env bash
# Turns a Debian bookworm root into a codebridge sandbox image. Runs as root
# INSIDE that root, with apt's package lists present: codebridge setup runs it
# in a debootstrapped tree (chroot), configs/Containerfile in
# debian:bookworm-slim. One argument, the variant:
#
#   data     adds numpy, pandas, matplotlib (headless), scipy, scikit-learn,
#            Pillow and tzdata from Debian's packages
#   minimal  python3 only (already installed); only trims
#
# The image should also set ENV PYTHONDONTWRITEBYTECODE=1, and for data
# MPLBACKEND=Agg and MPLCONFIGDIR=/tmp/matplotlib.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1

variant=${1:?usage: sandbox-image.sh data|minimal}

# What the data variant adds to python3, and the packages it depends on that a
# headless sandbox never uses: they are replaced by empty stand-ins, because
# Debian makes them hard dependencies (so --no-install-recommends cannot drop
# them) and with them the image is 1.6 GB instead of about 350 MB.
#   python3-pythran     scipy's ahead-of-time compiler: gcc, g++, boost, BLAS headers
#   python3-pil.imagetk Pillow's and matplotlib's Tk GUI: tk, tcl, X11 libraries
#   python3-sympy       needed only by fontTools.misc.symfont
#   python3-lxml        optional for fontTools (it falls back to xml.etree); pulls libxml2 and ICU
#   unicode-data        the Unicode database as text files; fontTools ships what it needs
data_packages=(python3-numpy python3-pandas python3-matplotlib python3-scipy python3-sklearn python3-pil tzdata)
data_stubs=(python3-pythran python3-pil.imagetk python3-sympy python3-lxml unicode-data)
site=/usr/lib/python3/dist-packages

case $variant in
  minimal) ;;
  data)
    stubs=$(mktemp -d)
    for pkg in "${data_stubs[@]}"; do
      mkdir -p "$stubs/$pkg/DEBIAN"
      printf 'Package: %s\nVersion: 999:0\nArchitecture: all\nMaintainer: codebridge\nDescription: empty stand-in: the codebridge sandbox does not need %s\n' \
        "$pkg" "$pkg" >"$stubs/$pkg/DEBIAN/control"
      dpkg-deb --build "$stubs/$pkg" "$stubs/$pkg.deb" >/dev/null
    done
    dpkg --install "$stubs"/*.deb >/dev/null
    rm -rf "$stubs"
    apt-get install --yes --no-install-recommends -o Dpkg::Use-Pty=0 "${data_packages[@]}"

    # Tests and the sources of compiled extensions (Cython, C headers, type
    # stubs) are never imported. The .pyc files Debian compiled when it
    # installed the packages stay: a sandbox's root is read-only, so without
    # them every import would compile its module again, in every container.
    find "$site" -depth -type d \( -name tests -o -path '*/joblib/test' \) -exec rm -rf {} +
    find "$site" -type f \( -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi' -o -name '*.c' -o -name '*.h' \
      -o -name '*.pyi' -o -name conftest.py \) -delete
    # matplotlib's browser backends (WebAgg, nbagg) and their JavaScript: no
    # browser reaches a sandbox.
    rm -rf /usr/share/javascript

    # matplotlib keeps its font cache in MPLCONFIGDIR (/tmp/matplotlib, a fresh
    # tmpfs in every container), so it would rescan the fonts on the first plot
    # of every session. Build the cache here, and have Python copy it there at
    # start-up (a .pth file, which the site module runs, even under -I).
    MPLCONFIGDIR=/usr/share/codebridge/matplotlib MPLBACKEND=Agg python3 -c 'import matplotlib.font_manager'
    cat >"$site/_codebridge_mplcache.py" <<'PY'
"""Copies the matplotlib font cache built into the codebridge sandbox image to
MPLCONFIGDIR, so the first plot in a fresh container does not rescan the fonts.
Imported at start-up by _codebridge_mplcache.pth."""
import os

_SRC = "/usr/share/codebridge/matplotlib"


def _install():
    dst = os.environ.get("MPLCONFIGDIR")
    if not dst:
        return
    try:
        os.makedirs(dst, mode=0o700, exist_ok=True)
        for name in os.listdir(_SRC):
            target = os.path.join(dst, name)
            if not os.path.exists(target):
                with open(os.path.join(_SRC, name), "rb") as src, open(target, "xb") as out:
                    out.write(src.read())
    except OSError:
        pass  # matplotlib builds its own cache instead


_install()
PY
    echo 'import _codebridge_mplcache' >"$site/_codebridge_mplcache.pth"
    python3 -m py_compile "$site/_codebridge_mplcache.py"
    ;;
  *) echo "sandbox-image.sh: unknown variant $variant: want data or minimal" >&2; exit 2 ;;
esac

# Both: package caches and lists, documentation, translations, logs.
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old \
  /usr/share/doc/* /usr/share/man/* /usr/share/info/* /usr/share/locale/* /usr/share/lintian/* \
  /var/log/*.log /var/log/apt/*
