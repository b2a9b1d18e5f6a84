#!/bin/sh
# size.sh: the binary size of the same one-tool stdio server (the README's
# quick-start greeter) written with ours, go-sdk and mcp-go, beside two
# floors, and how many symbols of the heavy standard packages each links.
# Programs: bench/size/*/main.go. Each is built for linux/amd64 with
# CGO_ENABLED=0 go build -trimpath into a temporary directory; symbols are
# counted by `go tool nm`, a symbol belonging to package p when its name
# starts with "p." (as the library's linkage_test.go counts them).
# Usage: cd bench && ./size.sh            (prints a Markdown table)
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

programs="ours gosdk mcpgo floor floor-regexp"
packages="net/http crypto/tls crypto/x509 crypto/ecdsa crypto/rsa regexp math/big"

echo "$(go version), CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath"
echo
printf '| program | bytes | MB | MiB |'
for p in $packages; do printf ' %s |' "$p"; done
echo
printf '|---|--:|--:|--:|'
for p in $packages; do printf -- '--:|'; done
echo
for prog in $programs; do
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$tmp/$prog" "./size/$prog"
	bytes=$(wc -c <"$tmp/$prog" | tr -d ' ')
	go tool nm "$tmp/$prog" >"$tmp/$prog.nm"
	awk -v p="$prog" -v b="$bytes" 'BEGIN {
		s = b; c = ""
		while (length(s) > 3) { c = "," substr(s, length(s) - 2) c; s = substr(s, 1, length(s) - 3) }
		printf "| %s | %s | %.2f | %.2f |", p, s c, b / 1e6, b / 1048576
	}'
	for p in $packages; do
		printf ' %s |' "$(awk -v p="$p." 'index($NF, p) == 1 {n++} END {print n+0}' "$tmp/$prog.nm")"
	done
	echo
done
