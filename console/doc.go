// Package console is the node's web console: an http.Handler that shows the
// journal's runs, replays a run against the recorded, the current or an
// edited source of its tool, and (pages added per area) the registry, the
// approvals, the processes and the cluster. Templates and assets are
// embedded (html/template, one CSS file, one small JavaScript file for
// live updates); no page needs JavaScript to be read.
//
// # Protocol
//
// Every request but the login page and the static assets MUST belong to a
// session: a session is made by POST /login with a capability token of the
// node, verified by Backend.Login exactly as the kernel verifies tokens,
// and is kept server-side; the browser holds only its random id in the
// cookie "agentos_console" (HttpOnly, SameSite=Strict, Secure unless the
// console is served over plain HTTP on loopback). With
// Options.Anonymous (refused by New on an address that is not loopback)
// a request without a session acts as Backend.Anonymous.
//
// Every state change is a POST carrying the session's CSRF token (the form
// field "csrf"), compared in constant time, and coming from the console's
// own origin (Sec-Fetch-Site and Origin are checked): anything else is
// answered 403. The console sends no CORS header, denies framing
// (X-Frame-Options: DENY, CSP frame-ancestors 'none') and serves a strict
// Content-Security-Policy (only its own scripts and styles).
//
// Every read and every action goes through the Backend with the session's
// Principal: the Backend MUST check it against the token's rights exactly
// as the kernel tools do (the host's adapter acts through a kernel process
// holding a token delegated from the session's).
//
// # Lifecycle
//
// New returns a Server ready to serve; Close ends its sessions and stops
// its live streams. Sessions expire after Options.SessionTTL idle, or when
// their token expires or is revoked (Backend.Verify fails): the next request
// is sent to the login page.
//
// # Failure
//
// A Backend error is shown on the page with its message (which says what
// to do); capability refusals are answered 403, unknown runs 404, bad input
// 400. The console never answers a request of another origin.
package console
