// Package host is the host side of the sandbox protocol: it answers the
// requests a run's Python code sends (a [protocol.Handler]) from the configured MCP
// servers. [Directory] holds the servers of the current configuration, swapped
// whole on every reload; each run gets a host that sees the configuration it
// started with. The host lists, documents, searches and calls downstream
// tools under the tool policy and the pins of their definitions (a changed
// tool is quarantined: hidden and refused), audits every call, serves the
// servers' resources and prompts ([Catalog]), keeps memories and saved
// helpers, and collects the images and files a run returns ([Attachments]).
// A request to a server that needs a sign-in signs in through the run's
// client, where it takes URL-mode questions ([SignIn]).
package host
