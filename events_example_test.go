package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/e6ac58cb/mcp"
)

// A server declares an event type whose payload is a Go type and publishes
// its occurrences from anywhere. A client polls it with an opaque cursor:
// the first poll, from now, returns only the cursor; the next returns what
// was published since, in order.
func ExampleAddEventType() {
	type Deploy struct {
		Service string `json:"service"`
		Version string `json:"version"`
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "deployments", Version: "1.0.0"})
	deploys := mcp.AddEventType[Deploy](srv, "deploy.finished", "A deployment finished.")

	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "agent", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	for et, err := range client.EventTypes(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(et.Name, et.Delivery)
	}
	sub := mcp.EventSubscription{Name: "deploy.finished"}
	page, err := client.PollEvents(ctx, sub)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("from now:", len(page.Events), "events")

	deploys.Publish(ctx, Deploy{Service: "api", Version: "v2"})
	deploys.Publish(ctx, Deploy{Service: "web", Version: "v7"})
	sub.Cursor = page.Cursor
	page, err = client.PollEvents(ctx, sub)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range page.Events {
		fmt.Println(e.Name, string(e.Data))
	}
	fmt.Println("truncated:", page.Truncated, "more:", page.HasMore)
	// Output:
	// deploy.finished [poll push]
	// from now: 0 events
	// deploy.finished {"service":"api","version":"v2"}
	// deploy.finished {"service":"web","version":"v7"}
	// truncated: false more: false
}

// StreamEvents holds a push stream open and hands each occurrence to its
// function as it is published; it returns, with the cursor to resume from,
// when its context ends.
func ExampleClient_StreamEvents() {
	srv := mcp.NewServer(mcp.Implementation{Name: "alerts", Version: "1.0.0"})
	srv.AddEventType(mcp.EventType{Name: "alert.raised", Description: "An alert fired."})

	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "agent", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Start from a cursor, so that nothing published after it is missed.
	start, err := client.PollEvents(ctx, mcp.EventSubscription{Name: "alert.raised"})
	if err != nil {
		log.Fatal(err)
	}
	for _, text := range []string{`{"severity":"P1"}`, `{"severity":"P3"}`} {
		if _, err := srv.PublishEvent(ctx, mcp.EventOccurrence{Name: "alert.raised", Data: []byte(text)}); err != nil {
			log.Fatal(err)
		}
	}
	streamCtx, stop := context.WithCancel(ctx)
	seen := 0
	cursor, err := client.StreamEvents(streamCtx, mcp.EventSubscription{Name: "alert.raised", Cursor: start.Cursor}, 0, func(e mcp.EventOccurrence) {
		fmt.Println(e.Name, string(e.Data))
		if seen++; seen == 2 {
			stop()
		}
	})
	fmt.Println(err, cursor != "")
	// Output:
	// alert.raised {"severity":"P1"}
	// alert.raised {"severity":"P3"}
	// context canceled true
}

// An event type's subscription arguments can filter what a subscription
// gets: here a subscriber names the one service it watches, and the
// server's Filter passes on only that service's deploys.
func ExampleEventTopic_Filter() {
	type Deploy struct {
		Service string `json:"service"`
		Version string `json:"version"`
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "deployments", Version: "1.0.0"})
	deploys := mcp.AddEventType[Deploy](srv, "deploy.finished", "A deployment finished.")
	deploys.Filter(func(args json.RawMessage, d Deploy) (Deploy, bool) {
		var want struct {
			Service string `json:"service"`
		}
		json.Unmarshal(args, &want)
		return d, want.Service == "" || want.Service == d.Service
	})

	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "agent", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	sub := mcp.EventSubscription{Name: "deploy.finished", Arguments: map[string]string{"service": "web"}}
	page, err := client.PollEvents(ctx, sub)
	if err != nil {
		log.Fatal(err)
	}
	deploys.Publish(ctx, Deploy{Service: "api", Version: "v2"})
	deploys.Publish(ctx, Deploy{Service: "web", Version: "v7"})
	deploys.Publish(ctx, Deploy{Service: "api", Version: "v3"})
	sub.Cursor = page.Cursor
	page, err = client.PollEvents(ctx, sub)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range page.Events {
		fmt.Println(string(e.Data))
	}
	// Output:
	// {"service":"web","version":"v7"}
}
