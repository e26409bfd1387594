// Package pii replaces personal data (e-mail addresses, phone numbers,
// names from a list, custom patterns) by stable tokens before it can reach
// a model, and restores the real values only on the way out to a driver
// allowed to see them (docs/MCP.md).
//
// # Tokens
//
// A token is PII_<KIND>_<12 hex digits>, e.g. PII_EMAIL_3f9a2c1b9d0e: the
// kind is the pattern's name in capitals, the digits the first 48 bits of
// HMAC-SHA256(key, kind NUL value). The same value gives the same token in
// every run and after a restart (the key is kept per tool root); without
// the key nobody can compute the token of a chosen value. A token is made
// of letters, digits and underscores only, so it survives JSON (no
// escaping), URL encoding, HTML, quoting and string concatenation
// unchanged; restoring accepts it in any letter case.
//
// # Where it runs
//
// Tokenizer.Device and Tokenizer.Session wrap a driver so that its
// responses and errors are tokenized and, for a driver in restore_to, its
// requests restored first. They MUST sit below the journal's middleware:
// the journal then records tokens only, never a real value nor the map,
// and a replay serves the recorded tokens without needing the map.
// Tokenizer.ModelMiddleware tokenizes what a chat request sends to a model
// and MUST sit above the journal's middleware for the same reason.
//
// A value a call restored is also looked for in that call's reply and
// error in every encoding (percent-encoded at any depth, JSON and Go
// escapes, HTML references, any letter case) and replaced by its token
// before the detectors run (Echo): a fetch error that repeats the URL, or
// a server that echoes its query string, never hands it back.
//
// # The map
//
// Restoring needs the token -> value map (Map): BoltMap keeps it in its own
// 0600 bbolt file, never in the journal. Every token is in the map before
// the data holding it is returned, so a crash never leaves a token that
// cannot be restored.
package pii
