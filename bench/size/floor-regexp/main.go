// Command floor-regexp is bench/size/floor that also calls regexp, as the
// SDK's schema validation (the pattern keyword) and URI template matching
// do: each value it decodes is echoed unless it is a string the pattern
// given as the first argument does not match. Everything else is floor's. bench/size.sh measures it beside the
// one-tool servers.
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
	"regexp"
)

func main() {
	pattern := ""
	if len(os.Args) > 1 {
		pattern = os.Args[1]
	}
	re := regexp.MustCompile(pattern)
	dec := json.NewDecoder(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			return
		}
		if s, ok := v.(string); ok && !re.MatchString(s) {
			continue
		}
		if err := enc.Encode(v); err != nil {
			log.Fatal(err)
		}
	}
}
