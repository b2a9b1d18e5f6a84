// Command events shows the Events extension (SEP-3415) end to end, a
// server and a client in one process over Streamable HTTP on 127.0.0.1:
// the server declares an event type and publishes occurrences; the client
// reads them the three ways the extension has: it polls with a cursor,
// holds a push stream open from that cursor, and subscribes a webhook,
// whose deliveries a WebhookReceiver (an https server on loopback) checks
// and hands on.
//
//	go run ./examples/events
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/e6ac58cb/mcp"
)

// Deploy is the payload of the deploy.finished events.
type Deploy struct {
	Service string `json:"service"`
	Version string `json:"version"`
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run serves the events, reads them with a client and writes what the
// client sees to out.
func run(ctx context.Context, out io.Writer, clientOpts ...mcp.ClientOption) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The webhook endpoint: a receiver on an https server. The server
	// below reaches it through the endpoint's own client, which trusts
	// its certificate; the default webhook client would refuse a
	// loopback address.
	delivered := make(chan mcp.WebhookMessage, 1)
	receiver := mcp.NewWebhookReceiver(func(_ context.Context, m mcp.WebhookMessage) error {
		delivered <- m
		return nil
	})
	endpoint := httptest.NewTLSServer(receiver)
	defer endpoint.Close()

	srv := mcp.NewServer(mcp.Implementation{Name: "deployments", Version: "1.0.0"},
		mcp.WithWebhooks(mcp.WebhookOptions{Context: ctx, Client: endpoint.Client()}))
	deploys := mcp.AddEventType[Deploy](srv, "deploy.finished", "A deployment finished.")
	// Webhooks need an authenticated principal; this demo trusts a
	// header, where a real server verifies a token (BearerAuth).
	auth := mcp.AuthorizerFunc(func(r *http.Request) (string, error) { return r.Header.Get("X-Demo-User"), nil })
	mcpServer := httptest.NewServer(mcp.NewHTTPHandler(srv, mcp.WithAuthorizer(auth), mcp.WithContext(ctx)))
	defer mcpServer.Close()

	client := mcp.NewClient(mcp.Implementation{Name: "agent", Version: "1.0.0"}, clientOpts...)
	if err := client.Connect(ctx, mcp.NewHTTPTransport(mcpServer.URL, mcp.WithHeader("X-Demo-User", "demo"))); err != nil {
		return err
	}
	defer client.Close()
	publish := func(version string) error {
		_, err := deploys.Publish(ctx, Deploy{Service: "api", Version: version})
		return err
	}

	// Poll: the first poll, from now, returns only a cursor.
	sub := mcp.EventSubscription{Name: "deploy.finished"}
	first, err := client.PollEvents(ctx, sub)
	if err != nil {
		return err
	}
	if err := publish("v1"); err != nil {
		return err
	}
	sub.Cursor = first.Cursor
	page, err := client.PollEvents(ctx, sub)
	if err != nil {
		return err
	}
	for _, e := range page.Events {
		fmt.Fprintf(out, "poll: %s %s\n", e.Name, e.Data)
	}

	// Push: a stream from the poll's cursor gets what follows it.
	sub.Cursor = page.Cursor
	if err := publish("v2"); err != nil {
		return err
	}
	streamCtx, stopStream := context.WithCancel(ctx)
	cursor, _ := client.StreamEvents(streamCtx, sub, 0, func(e mcp.EventOccurrence) {
		fmt.Fprintf(out, "stream: %s %s\n", e.Name, e.Data)
		stopStream()
	})

	// Webhook: the receiver learns the secret first, so that it can
	// answer the server's verification challenge.
	sub.Cursor = cursor
	hook := mcp.WebhookDelivery{URL: endpoint.URL + "/hooks/deploys", Secret: mcp.NewWebhookSecret()}
	if err := receiver.AddSecret(hook.Secret); err != nil {
		return err
	}
	res, err := client.SubscribeEvents(ctx, sub, hook, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "webhook subscribed: the endpoint answered the challenge (%d-char id)\n", len(res.ID))
	if err := publish("v3"); err != nil {
		return err
	}
	m := <-delivered
	fmt.Fprintf(out, "webhook: %s %s (signature verified)\n", m.Event.Name, m.Event.Data)
	return client.UnsubscribeEvents(ctx, sub, hook.URL)
}
