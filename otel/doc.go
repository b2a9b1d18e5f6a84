// Package mcpotel traces and measures MCP clients and servers built with
// github.com/e6ac58cb/mcp, by the OpenTelemetry semantic conventions for
// MCP: semantic conventions v1.41.0, docs/gen-ai/mcp.md, status
// Development (the text is unchanged up to its move to the
// semantic-conventions-genai repository). It is a module of its own, so
// that the library stays standard library only.
//
// One [Telemetry] serves any number of peers. Wire it into each side with
// the library's middleware and session-end options:
//
//	tel := mcpotel.New() // the global providers; W3C Trace Context
//
//	srv := mcp.NewServer(impl, mcp.WithInboundMiddleware(tel.Inbound()),
//		mcp.WithOutboundMiddleware(tel.Outbound()), mcp.WithSessionEndHandler(tel.ServerSessionEnded))
//
//	cl := mcp.NewClient(impl, mcp.WithInboundMiddleware(tel.Inbound()),
//		mcp.WithOutboundMiddleware(tel.Outbound()), mcp.WithSessionEndHandler(tel.ClientSessionEnded))
//
// # Spans
//
// Every message a peer sends is a CLIENT span, every message it receives
// a SERVER span: a client's calls and a server's asks alike, requests and
// notifications alike. A span is named "{mcp.method.name} {target}", the
// target being the tool's name (tools/call) or the prompt's (prompts/get),
// or "{mcp.method.name}" alone. It carries mcp.method.name,
// mcp.protocol.version, mcp.session.id (a legacy HTTP session's),
// jsonrpc.request.id (requests only), mcp.resource.uri (resources/read,
// resources/subscribe, resources/unsubscribe,
// notifications/resources/updated), gen_ai.tool.name and
// gen_ai.operation.name "execute_tool" (tools/call), gen_ai.prompt.name
// (prompts/get), and on failure error.type and, for a JSON-RPC error,
// rpc.response.status_code. The transport is not visible to middleware, so
// network.* is left out; so are the opt-in gen_ai.tool.call.arguments and
// gen_ai.tool.call.result.
//
// The sender puts the trace context in the message's params._meta
// (traceparent and tracestate, or whatever [WithPropagator] gives), merged
// into a _meta already there; the receiver takes it as the SERVER span's
// parent and links the span already in the handler's context, if another.
// A 2026-07-28 call that asks for input is one CLIENT span whatever the
// rounds, and one SERVER span a round, each its child. A task's handler
// runs in the trace of the call that created it.
//
// # Errors
//
// A failed operation's span has status Error and error.type, and so does
// its duration metric:
//
//   - a JSON-RPC error: its code ("-32602"), also as
//     rpc.response.status_code, its message the status description;
//   - a tools/call result with isError set: "tool_error";
//   - a deadline, the caller's or the call's own (a *mcp.RequestTimeoutError):
//     "timeout";
//   - a cancelled call, or on the receiving side a request the peer
//     cancelled, which gets no answer: "cancelled";
//   - a connection that ended under the operation: "connection_closed";
//   - on the receiving side, a handler's error that is not an *mcp.Error,
//     or its panic, which the peer gets as an internal error: "-32603";
//   - anything else: "_OTHER".
//
// The conventions name only the first two. "timeout" is the example value
// the conventions give error.type; "cancelled" and "connection_closed"
// follow the general rule of a short, low-cardinality class. A 2026-07-28
// round that ends asking for input is no failure.
//
// # Metrics
//
// mcp.client.operation.duration (the sender's) and
// mcp.server.operation.duration (the receiver's) carry mcp.method.name,
// mcp.protocol.version, gen_ai.tool.name, gen_ai.operation.name,
// gen_ai.prompt.name, error.type and rpc.response.status_code as above;
// mcp.client.session.duration and mcp.server.session.duration carry
// mcp.protocol.version and error.type. All four are histograms in seconds
// with the conventions' bucket boundaries.
package mcpotel
