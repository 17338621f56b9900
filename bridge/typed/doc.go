// Package typed renders MCP tools as Python: from a tool's JSON schemas, a
// one-line signature, the parameters the sandbox checks calls against, and a
// stub with TypedDicts for the structured arguments and results. A tool that
// declares no output schema gets a return type inferred from the results
// [Results] has seen.
package typed
