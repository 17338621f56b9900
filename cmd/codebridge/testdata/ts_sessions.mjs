// Drives codebridge's sessions with the official MCP TypeScript SDK. argv:
// the codebridge binary, then a JSON list of steps run in order on one
// connection (ts_steps.mjs). Once connected it prints {"connected": true,
// "pid": codebridge's pid}.
import { createRequire } from "node:module";
import path from "node:path";
import { runSteps } from "./ts_steps.mjs";

const require = createRequire(path.join(process.env.CODEBRIDGE_TEST_NPM_CLIENTS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const transport = new StdioClientTransport({ command: process.argv[2], args: [], env: process.env, stderr: "inherit" });
const client = new Client({ name: "codebridge-ts-sessions", version: "1.0.0" });
await client.connect(transport);
process.stdout.write(JSON.stringify({ connected: true, pid: transport.pid }) + "\n");
await runSteps(client, JSON.parse(process.argv[3]), () => ({}));
await client.close();
process.exit(0);
