// Drives codebridge's sessions with the official MCP TypeScript SDK. argv:
// the codebridge binary, then a JSON list of steps run in order on one
// connection. Once connected it prints {"connected": true, "pid": codebridge's pid};
// then {code, timeout?, reset?} calls run_python and prints one JSON line
// {text, isError, out}; {pause: true} prints {"paused": true} and waits for a
// line on stdin (the Go test checks containers meanwhile).
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const require = createRequire(path.join(process.env.CODEBRIDGE_TEST_NPM_CLIENTS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const transport = new StdioClientTransport({ command: process.argv[2], args: [], env: process.env, stderr: "inherit" });
const client = new Client({ name: "codebridge-ts-sessions", version: "1.0.0" });
await client.connect(transport);
process.stdout.write(JSON.stringify({ connected: true, pid: transport.pid }) + "\n");
for (const step of JSON.parse(process.argv[3])) {
  if (step.pause) {
    process.stdout.write(JSON.stringify({ paused: true }) + "\n");
    await lines.next();
    continue;
  }
  const args = { code: step.code };
  if (step.timeout) args.timeout = step.timeout;
  if (step.reset) args.reset = true;
  const r = await client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 180000 });
  process.stdout.write(JSON.stringify({
    text: r.content.map((c) => c.text ?? "").join(""),
    isError: r.isError === true,
    out: r.structuredContent,
  }) + "\n");
}
await client.close();
process.exit(0);
