module github.com/e6ac58cb/mcp

go 1.25
