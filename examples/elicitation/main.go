// Command elicitation shows a server tool asking the user for what it
// needs in the middle of a call (form elicitation), and a client answering
// with a form on the terminal.
//
//	go run ./examples/elicitation               # a scripted user answers
//	go run ./examples/elicitation -interactive  # you answer
//	go run ./examples/elicitation -protocol 2025-11-25
//
// Client and server run in one process over an in-memory connection, and
// the program exits 0 once both bookings are done. The same code works on
// every protocol revision, by two mechanics: up to 2025-11-25 the ask is a
// live request from server to client; on 2026-07-28 the call ends
// "input required", the client answers and sends the call again, and the
// tool's handler runs again, this time getting the answer.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/e6ac58cb/mcp"
)

func main() {
	interactive := flag.Bool("interactive", false, "answer the forms yourself, on standard input")
	protocol := flag.String("protocol", "", "the protocol `revision` to speak (default: the newest both sides know)")
	flag.Parse()
	// The scripted user books a table at the first restaurant and declines
	// the second.
	var answers io.Reader = strings.NewReader("4\n19:30\ny\ndecline\n")
	if *interactive {
		answers = os.Stdin
	}
	if err := run(context.Background(), *protocol, answers, !*interactive, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "elicitation:", err)
		os.Exit(1)
	}
}

// answerTime is how long a person may take over a form.
const answerTime = 5 * time.Minute

func run(ctx context.Context, protocol string, answers io.Reader, echo bool, w io.Writer) error {
	clientSide, serverSide := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the server
	go newServer().Serve(ctx, serverSide)

	// A client declares that it can answer elicitations by having a
	// handler for them. A person takes time to fill in a form, and up to
	// 2025-11-25 that time counts against the idle bound of the call that
	// asked (60s by default): give the calls room.
	user := &terminalForm{in: bufio.NewReader(answers), out: w, echo: echo}
	opts := []mcp.ClientOption{mcp.WithElicitationHandler(user.fill), mcp.WithRequestTimeout(answerTime)}
	if protocol != "" {
		opts = append(opts, mcp.WithProtocolVersion(protocol))
	}
	client := mcp.NewClient(mcp.Implementation{Name: "elicitation-example", Version: "1.0.0"}, opts...)
	if err := client.Connect(ctx, clientSide); err != nil {
		return err
	}
	defer client.Close()
	fmt.Fprintf(w, "connected (protocol %s)\n", client.ProtocolVersion())

	for _, restaurant := range []string{"Chez Gopher", "The Rusty Crab"} {
		fmt.Fprintf(w, "calling book_table for %s\n", restaurant)
		res, err := client.CallTool(ctx, "book_table", map[string]string{"restaurant": restaurant})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "result:", res.Content[0].Text)
	}
	return nil
}

type bookArgs struct {
	Restaurant string `json:"restaurant" schema:"minLength=1"`
}

// bookingForm is what book_table asks the user. Elicit infers the form's
// schema from it; elicitation allows only a flat object of strings,
// numbers, booleans and enums.
type bookingForm struct {
	Guests int    `json:"guests" description:"How many people?" schema:"minimum=1,maximum=12"`
	Time   string `json:"time" description:"At what time (HH:MM)?"`
	Window bool   `json:"window,omitempty" description:"A table by the window?"`
}

func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "bookings", Version: "1.0.0"})
	mcp.AddTool(srv, mcp.Tool{Name: "book_table", Description: "Books a table, asking the user for the details."},
		func(ctx context.Context, req *mcp.CallToolRequest, in bookArgs) (*mcp.CallToolResult, error) {
			// On 2026-07-28 this handler runs twice: the first Elicit
			// returns ErrInputRequired, which the handler must return as
			// it is; the client then answers and calls again, and the
			// second run's Elicit returns the answer. So do nothing before
			// an ask that must not happen twice.
			answer, err := req.Gateway().Elicit(ctx, "Booking a table at "+in.Restaurant+".", bookingForm{},
				mcp.WithAskTimeout(answerTime)) // the ask's own idle bound, up to 2025-11-25
			if err != nil {
				return nil, err
			}
			switch answer.Action {
			case mcp.ActionDecline:
				return text("No table booked at " + in.Restaurant + ": you declined."), nil
			case mcp.ActionCancel:
				return text("No table booked at " + in.Restaurant + ": you cancelled."), nil
			}
			// The answer comes from the client: check it like any input.
			var form bookingForm
			raw, _ := json.Marshal(answer.Content)
			if err := json.Unmarshal(raw, &form); err != nil {
				return nil, fmt.Errorf("the form came back malformed: %v", err)
			}
			if _, err := time.Parse("15:04", form.Time); err != nil || form.Guests < 1 || form.Guests > 12 {
				return nil, fmt.Errorf("cannot book %d guests at %q", form.Guests, form.Time)
			}
			where := ""
			if form.Window {
				where = " by the window"
			}
			return text(fmt.Sprintf("Booked a table for %d at %s%s at %s.", form.Guests, form.Time, where, in.Restaurant)), nil
		})
	return srv
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(s)}}
}

// terminalForm is the client's side: it shows the server's message, asks
// for each field of the requested schema on a line of its own, and
// answers with the user's action.
type terminalForm struct {
	in   *bufio.Reader
	out  io.Writer
	echo bool // print the answers read, when they are not typed
}

func (f *terminalForm) fill(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	var schema struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(p.RequestedSchema, &schema); err != nil {
		return nil, err // the server is told its request failed
	}
	fmt.Fprintf(f.out, "server asks: %s Answer each question, or type decline or cancel.\n", p.Message)
	content := map[string]any{}
	// A real client would show the fields in the schema's order; sorting
	// keeps this one short.
	for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
		field := schema.Properties[name]
		optional := ""
		if !slices.Contains(schema.Required, name) {
			optional = ", optional"
		}
		fmt.Fprintf(f.out, "  %s (%s%s) %s ", name, field.Type, optional, field.Description)
		for {
			line, err := f.in.ReadString('\n')
			line = strings.TrimSpace(line)
			if err != nil && line == "" { // no more input: the user walked away
				fmt.Fprintln(f.out)
				return &mcp.ElicitResult{Action: mcp.ActionCancel}, nil
			}
			if f.echo {
				fmt.Fprintln(f.out, line)
			}
			if line == mcp.ActionDecline || line == mcp.ActionCancel {
				return &mcp.ElicitResult{Action: line}, nil
			}
			if line == "" && optional != "" {
				break
			}
			if v, ok := parse(field.Type, line); ok {
				content[name] = v
				break
			}
			fmt.Fprintf(f.out, "  %s, please: ", field.Type)
		}
	}
	return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: content}, nil
}

// parse reads a value of a schema's type from what the user typed.
func parse(typ, s string) (any, bool) {
	switch typ {
	case "integer":
		n, err := strconv.Atoi(s)
		return n, err == nil
	case "number":
		x, err := strconv.ParseFloat(s, 64)
		return x, err == nil
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, true
		case "n", "no", "false":
			return false, true
		}
		return nil, false
	}
	return s, s != ""
}
