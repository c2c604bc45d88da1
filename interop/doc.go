// Package interop holds acprpc's interoperability tests against the official
// TypeScript ACP SDK (@agentclientprotocol/sdk, pinned in package.json) and
// against a raw scripted peer that speaks as the Rust SDK and LSP peers do.
//
// The tests run the TypeScript scripts of this directory with Node.js
// (`node --import tsx src/<script>.ts`), after `npm ci` here. Outside CI a
// missing Node.js or SDK skips those tests; with CI=true it fails them. The
// raw-wire tests need nothing but Go. See docs/interop.md.
package interop
