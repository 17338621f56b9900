// A downstream MCP server that misbehaves on request, for the adversarial
// tests: newline-delimited JSON-RPC over stdio, no dependencies.
//
//	echo {message}  answers "Echo: <message>"
//	pid             answers its process id
//	crash           exits with status 3 in the middle of the call, without answering
//	hang            never answers
import { createInterface } from "node:readline";

const tools = ["echo", "pid", "crash", "hang"].map((name) => ({
  name,
  description: `crashy ${name}`,
  inputSchema: { type: "object", properties: name === "echo" ? { message: { type: "string" } } : {} },
}));

const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
const text = (s) => ({ content: [{ type: "text", text: s }] });

createInterface({ input: process.stdin }).on("line", (line) => {
  const req = JSON.parse(line);
  if (req.id === undefined) return; // a notification
  switch (req.method) {
    case "initialize":
      return send({ id: req.id, result: {
        protocolVersion: req.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "crashy", version: "1" },
      } });
    case "tools/list":
      return send({ id: req.id, result: { tools } });
    case "tools/call":
      switch (req.params.name) {
        case "echo": return send({ id: req.id, result: text("Echo: " + req.params.arguments.message) });
        case "pid": return send({ id: req.id, result: text(String(process.pid)) });
        case "crash":
          process.stderr.write("crashy: crashing on purpose\n");
          process.exit(3);
        case "hang": return;
      }
      return send({ id: req.id, error: { code: -32602, message: "unknown tool" } });
    default:
      return send({ id: req.id, error: { code: -32601, message: "method not found" } });
  }
});
