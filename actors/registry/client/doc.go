// Package client is the typed client of the registry actor
// (actors/registry): its requests (Register, Search, Get, List, Used), its
// changes (Watch: the Changed events it publishes on its node's
// EventStream), the registry's errors, which a reply's Failure maps back to
// (errors.Is works), and DefaultThreshold. The tools and hits it returns are the
// tool-metadata leaf's types (internal/toolmeta.Tool, Hit).
//
// IMPORTANT: this package holds no actor and imports no actor package but
// the registry's messages: any package may import it to reach the registry
// actor (internal/archcheck's rule); only the composition root opens the
// registry itself (package registry).
package client
