// Package capability holds the two things that gate every privileged call in
// agentos: capability tokens (who may do what, on which resources) and quota
// accounts (how much they may spend).
//
// # Tokens
//
// An Authority holds a secret key and issues Tokens. A token names its
// holder, its grants (a right on a resource prefix: read on tools/reports/,
// fetch on https://api.example.com/), its caveats (an expiry on the kernel
// clock, a number of uses) and the chain of tokens it was derived from. Its
// signature (HMAC-SHA256 under the key) covers every field, so:
//
//   - a token cannot be forged or edited: Verify fails on any change;
//   - it can be checked on any node that shares the key (tokens are plain
//     data: see Token.Encode and Decode);
//   - attenuation only narrows: Attenuate refuses a right or a scope the
//     parent lacks, and the parent's caveats are always carried over, so a
//     caveat cannot be stripped by re-deriving;
//   - revocation is transitive: a token is dead when it, or any token in its
//     chain, was revoked; RevokeHolder kills every token issued to a process
//     (called when it exits);
//   - an operator revokes any token signed with the key, wherever it was
//     minted: RevokeToken (by id) and RevokeIssuedTo (every token issued to
//     a holder until now, and what was derived from them: tokens carry
//     their issue time and their ancestors' holders and issue times). These
//     revocations are durable: the Authority keeps them in its
//     RevocationStore (Options.Store; RevocationFile is a bbolt one) and
//     applies them again when it is made.
//
// # Across nodes
//
// Tokens verify on every node whose Authority has the same key
// (Options.Key; agentos.json names the environment variable holding it:
// capability.signing_key_env). Revocations are shared by message: every
// Revoke and RevokeHolder is reported to the subscribers (Subscribe,
// Options.OnRevoke) as a signed Revocation (so are RevokeToken and
// RevokeIssuedTo, marked Durable), which the cluster publishes
// (capabilitypb.Revocation) and every other node feeds to Apply
// (idempotent; it never re-publishes; it stores the durable ones). A node
// that joins, or missed
// messages, applies another node's Revoked. Because every token carries
// its ancestors' ids, a node refuses the descendants of a revoked token even
// when it never saw the revoked token or them.
//
// IMPORTANT: until a revocation reaches a node (publish latency plus
// Apply; see docs/SECURITY.md), that node still accepts the token. Use
// counts (Caveats.MaxUses) are NOT shared: a token with MaxUses n passes up
// to n checks on EACH node.
//
// # Quotas
//
// Accounts form a tree. A charge is all-or-nothing up the chain of
// ancestors: it succeeds only if the account and every ancestor have room,
// and then it is applied to all of them. Refunds never fail. Exceeding a
// limit returns a *QuotaError whose Reason is "quota:<meter>".
package capability
