package mcpredis_test

import (
	"encoding/hex"
	"log"
	"net/http"
	"os"

	"github.com/e6ac58cb/mcp"
	mcpredis "github.com/e6ac58cb/mcp/redis"
	"github.com/redis/go-redis/v9"
)

// One instance of a server that runs as several behind a load balancer:
// its tasks, its legacy sessions and their event logs are on Redis, and
// so are the messages between the instances. Every instance signs
// requestState with the same key.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	broadcaster := mcpredis.NewBroadcaster(rdb)
	defer broadcaster.Close()
	stateKey, err := hex.DecodeString(os.Getenv("MCP_STATE_KEY")) // 32 bytes or more, in hex
	if err != nil {
		log.Fatal(err)
	}

	srv := mcp.NewServer(mcp.Implementation{Name: "shared", Version: "1.0.0"},
		mcp.WithTasks(mcp.TaskOptions{Store: mcpredis.NewTaskStore(rdb)}),
		mcp.WithBroadcaster(broadcaster),
		mcp.WithStateKey(stateKey),
	)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv,
		mcp.WithEventStore(mcpredis.NewEventStore(rdb)),
		mcp.WithSessionStore(mcpredis.NewSessionStore(rdb)),
	))
	log.Fatal(mcp.NewHTTPServer(":8080", mux).ListenAndServe())
}
