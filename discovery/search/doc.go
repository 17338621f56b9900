// Package search ranks tool documentation against a free-text query with BM25,
// splitting identifiers on snake_case, camelCase, kebab-case and dots.
//
// A word in a tool's name counts three times, in its server's name twice, in
// a parameter name one and a half times, and in the description once, so a
// query like "sum of two numbers" finds the tool named get-sum before tools
// that only mention numbers.
package search
