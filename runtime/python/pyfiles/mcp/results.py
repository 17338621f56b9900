"""Images and files that come back with run_python's result.

show_image(obj) and return_file(path) send their bytes to codebridge over the
protocol channel; the run_python result then carries them after the text, as
MCP image content and embedded resources, in the order they were sent.
matplotlib figures come back by themselves: plt.show() sends the open
figures, and figures still open when a run ends are sent then. Limits per
run (MCP_BRIDGE_MAX_ATTACHMENT_SIZE, MCP_BRIDGE_MAX_ATTACHMENTS,
MCP_BRIDGE_MAX_ATTACHMENTS_TOTAL) hold; what is over them is left out with a
note in the result, and show_image and return_file raise MCPError(too_large).
"""

import io
import os
import sys

from . import _channel
from ._channel import MCPError, _call

__all__ = ["show_image", "return_file"]

# Magic numbers of the image formats MCP clients display.
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _sniff(data):
    for magic, mime in _IMAGE_MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _limit():
    if _channel.channel is None:
        raise MCPError("not connected to codebridge (only available inside run_python)", code="internal")
    return _channel.channel.max_attachment


def _attach(kind, mime_type, name, data, size=None):
    """Sends data, or only its size when it is over the limit per attachment:
    codebridge then notes it as dropped and the request fails with too_large."""
    size = len(data) if data is not None else size
    params = {"kind": kind, "name": name, "mime_type": mime_type, "bytes": size}
    if data is not None and size <= _limit():
        import base64

        params["data"] = base64.b64encode(data).decode("ascii")
    _call("attach", params)


def _figure_png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _figure_name(fig):
    label = fig.get_label() if hasattr(fig, "get_label") else ""
    return "%s.png" % (label or "figure-%s" % getattr(fig, "number", 1))


def show_image(obj, mime_type=None, name=None):
    """Returns an image with the run's result, after the text.

    obj is a matplotlib figure (sent as PNG and closed), a PIL image (sent as
    PNG), PNG, JPEG, GIF or WebP bytes, or the path of such a file. Raises
    MCPError(too_large) when the image is over the run's limits."""
    if hasattr(obj, "savefig"):  # a matplotlib figure
        data = _figure_png(obj)
        name = name or _figure_name(obj)
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
            plt.close(obj)
        _attach("image", "image/png", name, data)
        return
    if hasattr(obj, "save") and hasattr(obj, "mode"):  # a PIL image
        img = obj if obj.mode in ("1", "L", "LA", "P", "RGB", "RGBA", "I") else obj.convert("RGBA")
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        _attach("image", "image/png", name or "image.png", buf.getvalue())
        return
    if isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        default_name = "image"
    elif isinstance(obj, (str, os.PathLike)):
        with open(obj, "rb") as f:
            data = f.read()
        default_name = os.path.basename(os.fspath(obj))
    else:
        raise MCPError("show_image takes a matplotlib figure, a PIL image, image bytes or a file path; got %s"
                       % type(obj).__name__, code="bad_arguments")
    mime = mime_type or _sniff(data)
    if mime is None:
        raise MCPError("show_image: these bytes are not PNG, JPEG, GIF or WebP; pass mime_type= if they are "
                       "another image format, or use return_file for other files", code="bad_arguments")
    _attach("image", mime, name or default_name, data)


def return_file(path, mime_type=None, name=None):
    """Returns a file the code wrote with the run's result, as an embedded
    resource (text for text types, else base64).

    mime_type defaults to a guess from the file name. Raises
    MCPError(too_large) when the file is over the run's limits: return a
    smaller file, or print a summary instead."""
    path = os.fspath(path)
    size = os.stat(path).st_size
    import mimetypes

    mime = mime_type or mimetypes.guess_type(path)[0] or "application/octet-stream"
    name = name or os.path.basename(path)
    limit = _limit()
    if size > limit:  # not read: only its size is sent
        _attach("file", mime, name, None, size)
        return
    with open(path, "rb") as f:
        data = f.read(limit + 1)  # the file may have grown since stat
    _attach("file", mime, name, data)


def _send_open_figures():
    """Sends every open matplotlib figure and closes it: plt.show(), and the
    end of each run. A figure over the limits is left out with a note in the
    result; the code has no chance to react at the end of a run."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or getattr(getattr(plt, "__spec__", None), "_initializing", False):
        # Not imported, or still being imported by the session's preload
        # thread: the code cannot have opened a figure with it yet.
        return
    for num in plt.get_fignums():
        fig = plt.figure(num)
        try:
            show_image(fig)
        except MCPError as e:
            if e.code != "too_large":
                raise
        finally:
            plt.close(fig)
