// Runs the TypeScript SDK's example OAuth-protected MCP server
// (examples/server/simpleStreamableHttp.js --oauth, with its demo
// authorization server; MCP_PORT and MCP_AUTH_PORT set by the caller), with
// refresh tokens added: the demo issues none. Each refresh prints one line,
// "REFRESH ok" or "REFRESH refused"; SIGUSR2 revokes every refresh token
// (and prints "REVOKED").
import { randomUUID } from "node:crypto";
import path from "node:path";
import { pathToFileURL } from "node:url";

const sdk = path.join(process.env.CODEBRIDGE_TEST_NPM_CLIENTS, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm");
const load = (rel) => import(pathToFileURL(path.join(sdk, rel)).href);
const { DemoInMemoryAuthProvider } = await load("examples/server/demoInMemoryOAuthProvider.js");
const { InvalidGrantError } = await load("server/auth/errors.js");

const refresh = new Map(); // refresh token -> {clientId, scopes, resource}
const exchange = DemoInMemoryAuthProvider.prototype.exchangeAuthorizationCode;
DemoInMemoryAuthProvider.prototype.exchangeAuthorizationCode = async function (client, code, ...rest) {
  const params = this.codes.get(code)?.params ?? {};
  const tokens = await exchange.call(this, client, code, ...rest);
  const rt = randomUUID();
  refresh.set(rt, { clientId: client.client_id, scopes: params.scopes || [], resource: params.resource });
  return { ...tokens, refresh_token: rt };
};
DemoInMemoryAuthProvider.prototype.exchangeRefreshToken = async function (client, rt) {
  const data = refresh.get(rt);
  if (!data || data.clientId !== client.client_id) {
    console.log("REFRESH refused");
    throw new InvalidGrantError("the refresh token is revoked or unknown");
  }
  refresh.delete(rt);
  const token = randomUUID();
  this.tokens.set(token, { token, clientId: client.client_id, scopes: data.scopes, expiresAt: Date.now() + 3600000, resource: data.resource, type: "access" });
  const next = randomUUID();
  refresh.set(next, data);
  console.log("REFRESH ok");
  return { access_token: token, token_type: "bearer", expires_in: 3600, refresh_token: next, scope: data.scopes.join(" ") };
};
process.on("SIGUSR2", () => {
  refresh.clear();
  console.log("REVOKED");
});

process.argv.push("--oauth");
await load("examples/server/simpleStreamableHttp.js");
