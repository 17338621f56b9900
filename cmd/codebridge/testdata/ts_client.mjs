// Drives codebridge with the official MCP TypeScript SDK: list tools, run code,
// run failing code. Prints one JSON object for the Go test to check.
// The SDK is resolved from the npm folder scripts/test.sh installs into.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.CODEBRIDGE_TEST_NPM_CLIENTS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const transport = new StdioClientTransport({ command: process.argv[2], args: [], env: process.env, stderr: "inherit" });
const client = new Client({ name: "codebridge-ts-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const ok = await client.callTool({ name: "run_python", arguments: { code: "print(1+2)" } }, undefined, { timeout: 120000 });
const bad = await client.callTool({ name: "run_python", arguments: { code: "raise ValueError('boom')" } }, undefined, { timeout: 120000 });
process.stdout.write(JSON.stringify({
  tools: tools.map((t) => t.name),
  print: ok.structuredContent?.stdout,
  raised: bad.isError === true,
  trace: bad.content.map((c) => c.text).join(""),
}));
await client.close();
