package main

import (
	"context"
	"fmt"
	"os"
)

// Example runs the program and checks its whole output: the menu of
// prompts, completions that depend on what was typed and on the other
// arguments, prompts filled in, and the server's checks of arguments.
func Example() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// /code_review language code [style]: Asks for a review of a piece of code.
	// /commit_message kind summary: Drafts a conventional commit message.
	// complete /code_review language="g": gleam, go
	// complete /code_review style="" (language=go): effective-go, google-go, uber-go
	// complete /code_review style="p" (language=python): pep8
	// complete /commit_message kind="f": feat, fix
	// complete /commit_message scope: mcp: Invalid params: prompt "commit_message" has no argument "scope" (code -32602)
	// code_review: A review of go code
	//   user: Review this go code against the effective-go style guide:
	//   user: func add(a, b int) int { return a + b }
	// commit_message: Write a commit message starting fix: for this change: close the file on error
	// commit_message without a summary: mcp: Invalid params: prompt "commit_message" needs the argument "summary" (code -32602)
}
