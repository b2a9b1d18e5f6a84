package mcp_test

import (
	"context"
	"fmt"
	"time"

	"github.com/e6ac58cb/mcp"
)

// A client that keeps what the server says stays valid: the second read
// within the minute is answered from the cache, and WithoutCache asks the
// server again.
func ExampleWithResultCache() {
	reads := 0
	srv := mcp.NewServer(mcp.Implementation{Name: "weather", Version: "1.0.0"},
		mcp.WithCacheHints(time.Minute, mcp.CacheScopePublic))
	srv.AddResource(mcp.Resource{URI: "weather://today", Name: "today"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		reads++
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.Params.URI, Text: "sunny"}}}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	go srv.Serve(context.Background(), st)
	cl := mcp.NewClient(mcp.Implementation{Name: "client", Version: "1.0.0"}, mcp.WithResultCache(0))
	if err := cl.Connect(context.Background(), ct); err != nil {
		panic(err)
	}
	defer cl.Close()
	for range 2 {
		res, err := cl.ReadResource(context.Background(), "weather://today")
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Contents[0].Text, "after", reads, "read(s) on the server")
	}
	if _, err := cl.ReadResource(context.Background(), "weather://today", mcp.WithoutCache()); err != nil {
		panic(err)
	}
	fmt.Println(reads, "reads with WithoutCache")
	// Output:
	// sunny after 1 read(s) on the server
	// sunny after 1 read(s) on the server
	// 2 reads with WithoutCache
}
