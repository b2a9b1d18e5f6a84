// Command floor is what any program importing the packages a full MCP SDK
// imports pays before calling into them: it decodes JSON from stdin and
// writes it back, and imports net/http, crypto/tls, crypto/x509,
// crypto/ecdsa, math/big, regexp and log/slog without using them (their
// package initialisation and types stay linked). bench/size.sh measures it
// beside the one-tool servers.
package main

import (
	_ "crypto/ecdsa"
	_ "crypto/tls"
	_ "crypto/x509"
	"encoding/json"
	"log"
	_ "log/slog"
	_ "math/big"
	_ "net/http"
	"os"
	_ "regexp"
)

func main() {
	dec := json.NewDecoder(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			return
		}
		if err := enc.Encode(v); err != nil {
			log.Fatal(err)
		}
	}
}
