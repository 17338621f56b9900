// Lets the MCP conformance suite (@modelcontextprotocol/conformance 0.1.16)
// run on Node 20: it imports fs.globSync, new in Node 22. Preloaded with
// `node --import THIS_FILE`, this file registers itself as a module hook that
// gives the suite's modules an fs with globSync taken from the glob package
// of the same npm tree. On Node 22 and later it changes nothing.
import fs from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

if (isMainThread && typeof fs.globSync !== 'function') {
  register(import.meta.url);
}

export async function resolve(specifier, context, next) {
  const fromSuite = context.parentURL?.includes('/node_modules/@modelcontextprotocol/conformance/');
  if (!fromSuite || (specifier !== 'fs' && specifier !== 'node:fs')) {
    return next(specifier, context);
  }
  const glob = await next('glob', context);
  const source = `export * from 'node:fs';
export { default } from 'node:fs';
export { globSync } from ${JSON.stringify(glob.url)};
`;
  return { url: 'data:text/javascript,' + encodeURIComponent(source), shortCircuit: true };
}
