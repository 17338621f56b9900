package main

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestDataWorkEndToEnd drives data work as an agent would, through the
// go-sdk client against the built binary, in the default (data) image: a
// pandas groupby over what a downstream MCP tool returned, a matplotlib chart
// that comes back as a PNG of the figure's size, a CSV that comes back as an
// embedded resource, and the limits' errors and notes.
func TestDataWorkEndToEnd(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	servers := npmServers(t)
	writeServers(t, dir, "m.json", map[string]any{"memory": servers["memory"]})
	cs, _ := session(t, bridgeEnv(t, dir, "MCP_BRIDGE_MAX_ATTACHMENT_SIZE=256k", "MCP_BRIDGE_MAX_ATTACHMENTS=3"))

	t.Run("pandas over a tool's data", func(t *testing.T) {
		out := mustRun(t, cs, `
import pandas as pd
rows = [("north", "a", 120), ("north", "b", 30), ("south", "c", 75), ("south", "d", 25), ("west", "e", 10)]
await mcp_memory.create_entities(entities=[
    {"name": n, "entityType": region, "observations": ["sales=%d" % v]} for region, n, v in rows])
graph = await mcp_memory.read_graph()
df = pd.DataFrame([{"region": e["entityType"], "sales": int(e["observations"][0].split("=")[1])} for e in graph["entities"]])
print(df.groupby("region")["sales"].sum().to_dict())
`)
		if out != "{'north': 150, 'south': 100, 'west': 10}\n" {
			t.Errorf("groupby printed %q", out)
		}
	})

	t.Run("chart and CSV come back after the text", func(t *testing.T) {
		csv := "region,sales\nnorth,150\nsouth,100\nwest,10\n"
		r := runPython(t, cs, map[string]any{"code": `
import matplotlib.pyplot as plt
df.groupby("region")["sales"].sum().to_csv("/tmp/totals.csv")
fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
df.groupby("region")["sales"].sum().plot.bar(ax=ax)
plt.show()
return_file("/tmp/totals.csv")
plt.figure(figsize=(2, 1), dpi=50)  # left open: returned when the run ends
print("plotted")
`})
		if r.IsError || r.Out.Stdout != "plotted\n" {
			t.Fatalf("run: %s", r.Text)
		}
		if len(r.Attached) != 3 {
			t.Fatalf("got %d attachments, want chart, CSV, open figure: %+v", len(r.Attached), r.Out.Attachments)
		}
		for i, want := range [][2]int{{400, 300}, {}, {100, 50}} {
			if i == 1 {
				res, ok := r.Attached[1].(*mcp.EmbeddedResource)
				if !ok || res.Resource.Text != csv || res.Resource.MIMEType != "text/csv" {
					t.Errorf("attachment 1: %#v, want the CSV %q as text", r.Attached[1], csv)
				}
				continue
			}
			img, ok := r.Attached[i].(*mcp.ImageContent)
			if !ok || img.MIMEType != "image/png" {
				t.Fatalf("attachment %d: %#v, want a PNG", i, r.Attached[i])
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
			if err != nil || cfg.Width != want[0] || cfg.Height != want[1] {
				t.Errorf("attachment %d: %dx%d (%v), want %dx%d", i, cfg.Width, cfg.Height, err, want[0], want[1])
			}
		}
		got := r.Out.Attachments
		if len(got) != 3 || got[0].Kind != "image" || got[1].Kind != "file" || got[1].Name != "totals.csv" ||
			got[1].Bytes != len(csv) || got[2].MIMEType != "image/png" {
			t.Errorf("structuredContent.attachments = %+v", got)
		}
	})

	t.Run("over the limits", func(t *testing.T) {
		r := runPython(t, cs, map[string]any{"code": `
import os
with open("/tmp/big.bin", "wb") as f:
    f.write(os.urandom(300 << 10))
try:
    return_file("/tmp/big.bin")
except MCPError as e:
    print(e.code, e.message)
try:
    show_image("/tmp/big.bin", mime_type="image/png")
except MCPError as e:
    print(e.code)
big = plt.figure(figsize=(20, 20), dpi=200)  # left open and over 256 KiB: dropped with a note
big.gca().imshow(__import__("numpy").random.rand(400, 400))
for i in range(4):  # the fourth is one more than MCP_BRIDGE_MAX_ATTACHMENTS=3
    try:
        show_image(b"\x89PNG\r\n\x1a\n" + bytes(8), name="tiny.png")
    except MCPError as e:
        print(i, e.code, "MCP_BRIDGE_MAX_ATTACHMENTS)" in e.message)
`})
		if r.IsError {
			t.Fatalf("run: %s", r.Text)
		}
		lines := strings.Split(strings.TrimSpace(r.Out.Stdout), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "too_large file \"big.bin\" not returned") ||
			!strings.Contains(lines[0], "MCP_BRIDGE_MAX_ATTACHMENT_SIZE") || !strings.Contains(lines[0], "smaller file") ||
			lines[1] != "too_large" || lines[2] != "3 too_large True" {
			t.Errorf("stdout:\n%s", r.Out.Stdout)
		}
		if len(r.Attached) != 3 {
			t.Errorf("got %d attachments, want the three tiny ones", len(r.Attached))
		}
		d := r.Out.DroppedAttachments
		if len(d) != 4 || d[0].Name != "big.bin" || d[1].Name != "big-2.bin" || d[2].Name != "tiny-4.png" ||
			d[3].Name != "figure-1.png" || !strings.Contains(d[3].Reason, "MCP_BRIDGE_MAX_ATTACHMENT_SIZE") {
			t.Errorf("dropped_attachments = %+v, want big.bin twice, the fourth tiny image and the open figure", d)
		}
		if _, note, _ := strings.Cut(r.Text, "[attachments]\n"); strings.Count(note, " not returned: ") != 4 {
			t.Errorf("text does not note what was dropped:\n%s", r.Text)
		}
	})
}

// TestAttachmentsMinimalImage: in the minimal image, with neither matplotlib
// nor PIL, show_image of PNG bytes and return_file still work, and code that
// tries matplotlib gets a plain ImportError.
func TestAttachmentsMinimalImage(t *testing.T) {
	requirePodman(t)
	img := testenv.MinimalImage()
	testenv.RequireImage(t, img)
	cs, _ := session(t, append(bridgeEnv(t, t.TempDir()), "MCP_BRIDGE_IMAGE="+img))
	r := runPython(t, cs, map[string]any{"code": `
import base64, zlib, struct
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 3, 2, 8, 0, 0, 0, 0)) + \
    chunk(b"IDAT", zlib.compress(b"\x00\x00\x00\x00" * 2)) + chunk(b"IEND", b"")
show_image(png, name="dot.png")
open("/tmp/notes.txt", "w").write("hello\n")
return_file("/tmp/notes.txt")
try:
    import matplotlib
except ImportError as e:
    print("ImportError", e.name)
`})
	if r.IsError || r.Out.Stdout != "ImportError matplotlib\n" {
		t.Fatalf("run: %s", r.Text)
	}
	if len(r.Attached) != 2 {
		t.Fatalf("got %d attachments, want 2", len(r.Attached))
	}
	if img, ok := r.Attached[0].(*mcp.ImageContent); !ok {
		t.Errorf("first attachment %#v, want an image", r.Attached[0])
	} else if cfg, err := png.DecodeConfig(bytes.NewReader(img.Data)); err != nil || cfg.Width != 3 || cfg.Height != 2 {
		t.Errorf("PNG %dx%d (%v), want 3x2", cfg.Width, cfg.Height, err)
	}
	if res, ok := r.Attached[1].(*mcp.EmbeddedResource); !ok || res.Resource.Text != "hello\n" || res.Resource.MIMEType != "text/plain" {
		t.Errorf("second attachment %#v, want notes.txt as text", r.Attached[1])
	}
}
