// Command resources shows a server publishing data as resources: one
// resource per note of a notebook, a resource template that reaches any
// line of any note, subscriptions that tell a client when a note changes,
// and list changes that tell it when a note is added.
//
//	go run ./examples/resources
//
// Client and server run in one process over an in-memory connection; the
// program exits 0 once it has shown each of these.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/e6ac58cb/mcp"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("resources: ")
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run connects a client, configured by opts, to the notebook server and
// walks through its resources.
func run(ctx context.Context, w io.Writer, opts ...mcp.ClientOption) error {
	clientSide, serverSide := mcp.NewInMemoryTransports()
	ctx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	go newNotebook().server.Serve(ctx, serverSide)

	// The server's news arrives on these handlers. They only pass it on,
	// never blocking: the handlers of one connection run one at a time.
	updated := make(chan string, 8)
	listChanged := make(chan struct{}, 1) // one pending "list again" is enough
	opts = append(opts,
		mcp.WithResourceUpdatedHandler(func(ctx context.Context, uri string) {
			select {
			case updated <- uri:
			default: // more news than this program reads
			}
		}),
		mcp.WithResourceListChangedHandler(func(ctx context.Context) {
			select {
			case listChanged <- struct{}{}:
			default:
			}
		}))
	client := mcp.NewClient(mcp.Implementation{Name: "resources-example", Version: "1.0.0"}, opts...)
	if err := client.Connect(ctx, clientSide); err != nil {
		return err
	}
	defer client.Close()
	fmt.Fprintf(w, "connected (protocol %s)\n", client.ProtocolVersion())

	if err := listResources(ctx, w, client); err != nil {
		return err
	}
	fmt.Fprintln(w, "templates:")
	for t, err := range client.ResourceTemplates(ctx) {
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s  %s\n", t.URITemplate, t.Description)
	}

	// A resource, and two URIs the template matches: one of a line that
	// is there, one of a line that is not.
	for _, uri := range []string{"notes://shopping", "notes://shopping/lines/2", "notes://shopping/lines/9"} {
		if err := read(ctx, w, client, uri); err != nil {
			return err
		}
	}

	// Subscribe, then change the note through a tool: the server tells
	// every client subscribed to it, and this one reads it again.
	if err := client.Subscribe(ctx, "notes://shopping"); err != nil {
		return err
	}
	fmt.Fprintln(w, "subscribed to notes://shopping")
	if err := call(ctx, w, client, "add_line", map[string]string{"note": "shopping", "line": "bread"}); err != nil {
		return err
	}
	uri, err := await(updated)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "updated:", uri)
	if err := read(ctx, w, client, uri); err != nil {
		return err
	}

	// A new note is a new resource: every connected client hears that the
	// list changed, and lists again.
	if err := call(ctx, w, client, "new_note", map[string]string{"note": "ideas", "line": "a notebook on Redis"}); err != nil {
		return err
	}
	if _, err := await(listChanged); err != nil {
		return err
	}
	fmt.Fprintln(w, "the list of resources changed")
	if err := listResources(ctx, w, client); err != nil {
		return err
	}
	return client.Unsubscribe(ctx, "notes://shopping")
}

// await returns the next value from c, or an error if none comes in a
// while: news from a server can be lost with the connection.
func await[T any](c <-chan T) (T, error) {
	select {
	case v := <-c:
		return v, nil
	case <-time.After(10 * time.Second):
		var zero T
		return zero, errors.New("the server's notification never came")
	}
}

// listResources prints every resource, asking for the pages as it goes.
func listResources(ctx context.Context, w io.Writer, client *mcp.Client) error {
	fmt.Fprintln(w, "resources:")
	for r, err := range client.Resources(ctx) {
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s  %s (%s)\n", r.URI, r.Name, r.MIMEType)
	}
	return nil
}

func read(ctx context.Context, w io.Writer, client *mcp.Client, uri string) error {
	res, err := client.ReadResource(ctx, uri)
	var rpcErr *mcp.Error
	if errors.As(err, &rpcErr) {
		// The code of a missing resource depends on the revision:
		// -32002 up to 2025-11-25, -32602 on 2026-07-28.
		fmt.Fprintf(w, "read %s: not there (%s)\n", uri, rpcErr.Message)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "read %s: %q\n", uri, res.Contents[0].Text)
	return nil
}

func call(ctx context.Context, w io.Writer, client *mcp.Client, tool string, args map[string]string) error {
	res, err := client.CallTool(ctx, tool, args)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "called %s: %s\n", tool, res.Content[0].Text)
	return nil
}

// notebook is the server's side: notes of a few lines each, served as
// resources.
type notebook struct {
	server *mcp.Server
	mu     sync.Mutex
	notes  map[string][]string
}

type lineArgs struct {
	Note string `json:"note" schema:"minLength=1"`
	Line string `json:"line"`
}

// noteInfo is what the tools answer, as structured content and as its
// JSON text.
type noteInfo struct {
	URI   string `json:"uri"`
	Lines int    `json:"lines"`
}

func newNotebook() *notebook {
	nb := &notebook{
		server: mcp.NewServer(mcp.Implementation{Name: "notebook", Version: "1.0.0"}),
		notes:  map[string][]string{"shopping": {"eggs", "milk"}, "todo": {"water the plants"}},
	}
	for _, name := range []string{"shopping", "todo"} {
		nb.addResource(name)
	}

	// A template serves every URI of its form; the handler gets the
	// variables matched in the URI asked for.
	nb.server.AddResourceTemplate(mcp.ResourceTemplate{
		URITemplate: "notes://{note}/lines/{n}",
		Name:        "line",
		Description: "One line of a note, counting from 1.",
		MIMEType:    "text/plain",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		nb.mu.Lock()
		lines := nb.notes[req.Vars["note"]]
		nb.mu.Unlock()
		n, err := strconv.Atoi(req.Vars["n"])
		if err != nil || n < 1 || n > len(lines) {
			return nil, mcp.ErrResourceNotFound // the client gets the revision's error
		}
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{MIMEType: "text/plain", Text: lines[n-1]}}}, nil
	})

	mcp.AddTool(nb.server, mcp.Tool{Name: "add_line", Description: "Adds a line to a note."},
		func(ctx context.Context, req *mcp.CallToolRequest, in lineArgs) (noteInfo, error) {
			nb.mu.Lock()
			lines, ok := nb.notes[in.Note]
			if ok {
				lines = append(lines, in.Line)
				nb.notes[in.Note] = lines
			}
			nb.mu.Unlock()
			if !ok {
				return noteInfo{}, fmt.Errorf("there is no note %q", in.Note)
			}
			// Tell the clients subscribed to the note; the others do not
			// hear of it.
			uri := "notes://" + in.Note
			nb.server.ResourceUpdated(uri)
			return noteInfo{URI: uri, Lines: len(lines)}, nil
		})

	mcp.AddTool(nb.server, mcp.Tool{Name: "new_note", Description: "Starts a note with a first line."},
		func(ctx context.Context, req *mcp.CallToolRequest, in lineArgs) (noteInfo, error) {
			nb.mu.Lock()
			_, exists := nb.notes[in.Note]
			if !exists {
				nb.notes[in.Note] = []string{in.Line}
			}
			nb.mu.Unlock()
			if exists {
				return noteInfo{}, fmt.Errorf("there is a note %q already", in.Note)
			}
			// Adding a resource while serving tells every client that the
			// list changed.
			nb.addResource(in.Note)
			return noteInfo{URI: "notes://" + in.Note, Lines: 1}, nil
		})
	return nb
}

// addResource publishes the note name as a resource.
func (nb *notebook) addResource(name string) {
	nb.server.AddResource(mcp.Resource{URI: "notes://" + name, Name: name, MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			nb.mu.Lock()
			defer nb.mu.Unlock()
			text := strings.Join(nb.notes[name], "\n")
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{MIMEType: "text/plain", Text: text}}}, nil
		})
}
