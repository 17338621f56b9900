// Package search ranks tool documentation against a free-text query with BM25,
// splitting identifiers on snake_case, camelCase, kebab-case and dots.
package search
