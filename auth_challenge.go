package mcp

import "strings"

// challenge is one authentication challenge of a WWW-Authenticate header
// (RFC 7235): a scheme, lower-cased, with either a token68 or parameters,
// whose names are lower-cased too. Client side.
type challenge struct {
	scheme  string
	token68 string
	params  map[string]string
}

// param returns the value of the parameter name (lower case), or "".
func (c *challenge) param(name string) string { return c.params[name] }

// bearerChallenge returns the first Bearer challenge of the header values,
// else the first DPoP one (RFC 9449 section 7.1: a server that takes
// DPoP-bound tokens challenges with that scheme, with the same
// parameters), or nil when there is neither.
func bearerChallenge(header []string) *challenge {
	if c := findChallenge(header, "bearer"); c != nil {
		return c
	}
	return findChallenge(header, "dpop")
}

// findChallenge returns the first challenge of the header values whose
// scheme is one of schemes (lower case), or nil.
func findChallenge(header []string, schemes ...string) *challenge {
	for _, c := range parseChallenges(header) {
		for _, s := range schemes {
			if c.scheme == s {
				return &c
			}
		}
	}
	return nil
}

// parseChallenges reads every challenge of the WWW-Authenticate header
// values: several challenges may share one value, separated by commas, and
// several values may each hold some. It never fails: what does not parse
// is skipped up to the next comma, so that a malformed challenge does not
// hide a good one after it.
func parseChallenges(header []string) []challenge {
	var out []challenge
	for _, h := range header {
		p := challengeParser{s: h}
		out = p.all(out)
	}
	return out
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) all(out []challenge) []challenge {
	for {
		p.skipSeparators()
		if p.i >= len(p.s) {
			return out
		}
		scheme := p.token()
		if scheme == "" {
			p.skipPast(',')
			continue
		}
		c := challenge{scheme: strings.ToLower(scheme)}
		if p.i < len(p.s) && p.s[p.i] != ' ' && p.s[p.i] != '\t' && p.s[p.i] != ',' {
			// A scheme runs into something that is no separator: garbage.
			p.skipPast(',')
			continue
		}
		p.skipSpace()
		if t, ok := p.token68(); ok {
			c.token68 = t
		} else {
			p.params(&c)
		}
		out = append(out, c)
	}
}

// params reads the auth-params of c, stopping before the next challenge.
func (p *challengeParser) params(c *challenge) {
	for {
		start := p.i
		p.skipSeparators()
		name := p.token()
		p.skipSpace()
		if name == "" || p.i >= len(p.s) || p.s[p.i] != '=' {
			p.i = start // the next challenge, or the end
			return
		}
		p.i++ // '='
		p.skipSpace()
		var value string
		if p.i < len(p.s) && p.s[p.i] == '"' {
			v, ok := p.quoted()
			if !ok {
				p.i = len(p.s) // an unterminated string runs to the end
				return
			}
			value = v
		} else {
			value = p.token()
		}
		if c.params == nil {
			c.params = make(map[string]string)
		}
		key := strings.ToLower(name)
		if _, dup := c.params[key]; !dup {
			c.params[key] = value
		}
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] != ',' {
			p.skipPast(',') // garbage after the value
		}
	}
}

// token68 reads a token68 (RFC 7235 section 2.1) when one stands alone
// before a comma or the end; otherwise it moves nothing.
func (p *challengeParser) token68() (string, bool) {
	j := p.i
	for j < len(p.s) && isToken68Char(p.s[j]) {
		j++
	}
	if j == p.i {
		return "", false
	}
	for j < len(p.s) && p.s[j] == '=' {
		j++
	}
	k := j
	for k < len(p.s) && (p.s[k] == ' ' || p.s[k] == '\t') {
		k++
	}
	if k < len(p.s) && p.s[k] != ',' {
		return "", false
	}
	t := p.s[p.i:j]
	p.i = k
	return t, true
}

// quoted reads a quoted-string, undoing its escapes.
func (p *challengeParser) quoted() (string, bool) {
	var b strings.Builder
	for j := p.i + 1; j < len(p.s); j++ {
		switch c := p.s[j]; c {
		case '"':
			p.i = j + 1
			return b.String(), true
		case '\\':
			if j+1 >= len(p.s) {
				return "", false
			}
			j++
			b.WriteByte(p.s[j])
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

func (p *challengeParser) token() string {
	j := p.i
	for j < len(p.s) && isTokenChar(p.s[j]) {
		j++
	}
	t := p.s[p.i:j]
	p.i = j
	return t
}

func (p *challengeParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *challengeParser) skipSeparators() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

// skipPast moves past the next c outside a quoted string, or to the end.
func (p *challengeParser) skipPast(c byte) {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case c:
			p.i++
			return
		case '"':
			if _, ok := p.quoted(); !ok {
				p.i = len(p.s)
			}
			continue
		}
		p.i++
	}
}

// isTokenChar reports whether c is a tchar of RFC 9110.
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68Char(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}

// scopeList splits a space-separated scope string (RFC 6749 section 3.3).
func scopeList(s string) []string { return strings.Fields(s) }
