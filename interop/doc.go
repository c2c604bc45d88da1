// Package interop holds acprpc's interoperability tests against the official
// TypeScript ACP SDK (@agentclientprotocol/sdk, pinned in package.json) and
// against a raw scripted peer that speaks as the Rust SDK and LSP peers do.
//
// The tests run the TypeScript scripts of this directory with Node.js
// (`node --import tsx src/<script>.ts`), after `npm ci` here, which
// `bash scripts/test.sh` at the repository's root runs itself. A missing
// Node.js or SDK fails those tests, unless ACPRPC_SKIP_INTEROP=1 asks to skip
// them (never under CI). The raw-wire tests need nothing but Go. See
// docs/interop.md.
package interop
