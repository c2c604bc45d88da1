// Package sdkshape is the shape of a Go ACP SDK that keeps its own API and
// runs on acprpc underneath: a raw method handler that returns the SDK's own
// error type, the SDK's own logger, typed calls that cancel with their
// context, and a Prompt that cancels the ACP way, through session/cancel.
// docs/embedding.md walks through it; the package is an example to read and
// copy from, not a library to depend on.
//
// What the SDK writes is the mapping: MethodHandler to an acprpc.Handler
// (connection.go), RequestError to and from *acprpc.Error (errors.go), and
// the typed calls (client.go). Everything that decides what the peer sees
// (IDs, the one answer per request, cancellation both ways, the order of
// notifications and answers, bad input) is acprpc's.
package sdkshape
