package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// applyDefaults fills in, recursively through properties, the default of every property
// missing from an object, and returns v. Objects are changed in place.
func (s *Schema) applyDefaults(v any) any {
	if obj, ok := v.(map[string]any); ok {
		filler := schemaDefaultsFiller{root: s}
		filler.fill(s, obj, 0, 0)
	}
	return v
}

// schemaValidatorCases are JSON Schema, instance, and "" when the instance is valid or
// else a part of the error.
var schemaValidatorCases = []struct {
	schema, instance, err string
}{
	// type
	{`{"type":"string"}`, `"a"`, ""},
	{`{"type":"string"}`, `1`, "got number, want string"},
	{`{"type":"integer"}`, `1`, ""},
	{`{"type":"integer"}`, `1.0`, ""},
	{`{"type":"integer"}`, `1e2`, ""},
	{`{"type":"integer"}`, `-0`, ""},
	{`{"type":"integer"}`, `1.5`, "got number, want integer"},
	{`{"type":"integer"}`, `"1"`, "got string, want integer"},
	{`{"type":"number"}`, `1.5`, ""},
	{`{"type":"number"}`, `1e400`, ""},
	{`{"type":"number"}`, `true`, "got boolean, want number"},
	{`{"type":"boolean"}`, `false`, ""},
	{`{"type":"boolean"}`, `0`, "got number, want boolean"},
	{`{"type":"null"}`, `null`, ""},
	{`{"type":"null"}`, `{}`, "got object, want null"},
	{`{"type":"object"}`, `{}`, ""},
	{`{"type":"object"}`, `[]`, "got array, want object"},
	{`{"type":"array"}`, `[]`, ""},
	{`{"type":"array"}`, `{}`, "got object, want array"},
	{`{"type":["string","null"]}`, `null`, ""},
	{`{"type":["string","null"]}`, `"x"`, ""},
	{`{"type":["string","null"]}`, `1`, "got number, want one of string, null"},
	{`{"type":"mystery"}`, `1`, "want mystery"},
	// enum
	{`{"enum":["red","green"]}`, `"red"`, ""},
	{`{"enum":["red","green"]}`, `"blue"`, `"blue" is not one of the allowed values ["red", "green"]`},
	{`{"enum":[1,2]}`, `2.0`, ""},
	{`{"enum":[1,2]}`, `"1"`, "is not one of the allowed values"},
	{`{"enum":[null,{"a":[1]}]}`, `{"a":[1.0]}`, ""},
	{`{"enum":[null,{"a":[1]}]}`, `{"a":[1],"b":2}`, "is not one of"},
	{`{"enum":[9007199254740993]}`, `9007199254740993`, ""},
	{`{"enum":[9007199254740993]}`, `9007199254740992`, "is not one of"},
	{`{"enum":[]}`, `1`, "is not one of"},
	// const
	{`{"const":"x"}`, `"x"`, ""},
	{`{"const":"x"}`, `"y"`, `"y" is not the allowed value "x"`},
	{`{"const":null}`, `null`, ""},
	{`{"const":null}`, `0`, "0 is not the allowed value null"},
	{`{"const":false}`, `false`, ""},
	{`{"const":[1,{"b":true}]}`, `[1,{"b":true}]`, ""},
	// properties, required
	{`{"properties":{"a":{"type":"integer"}}}`, `{"a":1}`, ""},
	{`{"properties":{"a":{"type":"integer"}}}`, `{"a":"x"}`, "/a: got string, want integer"},
	{`{"properties":{"a":{"type":"integer"}}}`, `{}`, ""},
	{`{"properties":{"a":{"type":"integer"}}}`, `"not an object"`, ""},
	{`{"properties":{"a/b":{"type":"integer"},"c~d":{"type":"integer"}}}`, `{"a/b":"x"}`, "/a~1b: got string"},
	{`{"properties":{"c~d":{"type":"integer"}}}`, `{"c~d":"x"}`, "/c~0d: got string"},
	{`{"required":["a","b"]}`, `{"a":1,"b":null}`, ""},
	{`{"required":["a","b"]}`, `{"a":1}`, "/b: required property missing"},
	{`{"required":["a"]}`, `[]`, ""},
	// additionalProperties, patternProperties
	{`{"properties":{"a":{}},"additionalProperties":false}`, `{"a":1}`, ""},
	{`{"properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"b":2}`, "/b: property is not allowed"},
	{`{"additionalProperties":{"type":"string"}}`, `{"x":"1","y":"2"}`, ""},
	{`{"additionalProperties":{"type":"string"}}`, `{"x":"1","y":2}`, "/y: got number, want string"},
	{`{"patternProperties":{"^n_":{"type":"number"}},"additionalProperties":false}`, `{"n_a":1}`, ""},
	{`{"patternProperties":{"^n_":{"type":"number"}},"additionalProperties":false}`, `{"n_a":"x"}`, "/n_a: got string, want number"},
	{`{"patternProperties":{"^n_":{"type":"number"}},"additionalProperties":false}`, `{"m":1}`, "/m: property is not allowed"},
	{`{"patternProperties":{"(":{}}}`, `{"a":1}`, "is not a supported regular expression"},
	// minProperties, maxProperties
	{`{"minProperties":1}`, `{"a":1}`, ""},
	{`{"minProperties":2}`, `{"a":1}`, "object has 1 properties, fewer than the minimum 2"},
	{`{"maxProperties":1}`, `{"a":1}`, ""},
	{`{"maxProperties":1}`, `{"a":1,"b":2}`, "object has 2 properties, more than the maximum 1"},
	// items, prefixItems
	{`{"items":{"type":"integer"}}`, `[1,2,3]`, ""},
	{`{"items":{"type":"integer"}}`, `[1,"x",3]`, "/1: got string, want integer"},
	{`{"prefixItems":[{"type":"string"},{"type":"integer"}]}`, `["a",1,{}]`, ""},
	{`{"prefixItems":[{"type":"string"},{"type":"integer"}]}`, `[1]`, "/0: got number, want string"},
	{`{"prefixItems":[{"type":"string"}],"items":{"type":"integer"}}`, `["a",1,2]`, ""},
	{`{"prefixItems":[{"type":"string"}],"items":{"type":"integer"}}`, `["a",1,"b"]`, "/2: got string, want integer"},
	{`{"prefixItems":[{}],"items":false}`, `[1]`, ""},
	{`{"prefixItems":[{}],"items":false}`, `[1,2]`, "/1: no value is allowed here"},
	// minItems, maxItems, uniqueItems
	{`{"minItems":2}`, `[1,2]`, ""},
	{`{"minItems":2}`, `[1]`, "array length 1 is less than the minimum 2"},
	{`{"maxItems":2}`, `[]`, ""},
	{`{"maxItems":2}`, `[1,2,3]`, "array length 3 is greater than the maximum 2"},
	{`{"uniqueItems":true}`, `[1,"1",[1],{"a":1}]`, ""},
	{`{"uniqueItems":true}`, `[1,2,1.0]`, "items 0 and 2 are equal"},
	{`{"uniqueItems":true}`, `[{"a":1,"b":2},{"b":2,"a":1}]`, "items 0 and 1 are equal"},
	{`{"uniqueItems":false}`, `[1,1]`, ""},
	// minLength, maxLength: counted in code points
	{`{"minLength":2}`, `"ab"`, ""},
	{`{"minLength":2}`, `"a"`, `"a" is shorter than 2 characters`},
	{`{"maxLength":5}`, `"héllo"`, ""},
	{`{"maxLength":2}`, `"😀😀"`, ""},
	{`{"maxLength":1}`, `"😀😀"`, "is longer than 1 characters"},
	{`{"minLength":3}`, `12`, ""},
	// pattern
	{`{"pattern":"b"}`, `"abc"`, ""},
	{`{"pattern":"^b"}`, `"abc"`, `"abc" does not match the pattern "^b"`},
	{`{"pattern":"^\\d{3}$"}`, `"123"`, ""},
	{`{"pattern":"^\\d{3}$"}`, `"1234"`, "does not match the pattern"},
	{`{"pattern":"^\\p{Lu}"}`, `"Été"`, ""},
	{`{"pattern":"(?=a)"}`, `"a"`, "is not a supported regular expression"},
	// minimum, maximum, exclusive bounds
	{`{"minimum":0}`, `0`, ""},
	{`{"minimum":0}`, `-1`, "-1 is less than the minimum 0"},
	{`{"maximum":100}`, `100`, ""},
	{`{"maximum":100}`, `150`, "150 is greater than the maximum 100"},
	{`{"maximum":100}`, `"150"`, ""},
	{`{"exclusiveMinimum":0}`, `0.001`, ""},
	{`{"exclusiveMinimum":0}`, `0`, "0 is not greater than the exclusive minimum 0"},
	{`{"exclusiveMaximum":1}`, `0.999`, ""},
	{`{"exclusiveMaximum":1}`, `1.0`, "1.0 is not less than the exclusive maximum 1"},
	{`{"maximum":1e308}`, `1e400`, "is greater than the maximum"},
	// multipleOf
	{`{"multipleOf":5}`, `15`, ""},
	{`{"multipleOf":5}`, `7`, "7 is not a multiple of 5"},
	{`{"multipleOf":0.1}`, `0.3`, ""},
	{`{"multipleOf":0.01}`, `19.99`, ""},
	{`{"multipleOf":0.1}`, `0.35`, "0.35 is not a multiple of 0.1"},
	{`{"multipleOf":2}`, `1e300`, ""},
	{`{"multipleOf":3}`, `1e-500`, "is not a multiple of 3"},
	// allOf, anyOf, oneOf, not
	{`{"allOf":[{"type":"integer"},{"minimum":2}]}`, `3`, ""},
	{`{"allOf":[{"type":"integer"},{"minimum":2}]}`, `1`, "1 is less than the minimum 2"},
	{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `1`, ""},
	{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `1.5`, "does not match any schema in anyOf"},
	{`{"oneOf":[{"type":"integer"},{"minimum":10}]}`, `5`, ""},
	{`{"oneOf":[{"type":"integer"},{"minimum":10}]}`, `12`, "matches more than one schema in oneOf"},
	{`{"oneOf":[{"type":"integer"},{"minimum":10}]}`, `1.5`, "does not match any schema in oneOf"},
	{`{"not":{"type":"string"}}`, `1`, ""},
	{`{"not":{"type":"string"}}`, `"a"`, "must not match the schema in not"},
	{`{"anyOf":[{"required":["a"]},{"required":["b"]}]}`, `{"b":1}`, ""},
	{`{"properties":{"x":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, `{"x":2}`, "/x: does not match any schema in anyOf"},
	// if, then, else
	{`{"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["a"]},"else":{"required":["b"]}}`, `{"kind":"a","a":1}`, ""},
	{`{"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["a"]},"else":{"required":["b"]}}`, `{"kind":"a","b":1}`, "/a: required property missing"},
	{`{"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["a"]},"else":{"required":["b"]}}`, `{"kind":"z","b":1}`, ""},
	{`{"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["a"]},"else":{"required":["b"]}}`, `{"kind":"z"}`, "/b: required property missing"},
	{`{"if":{"type":"string"},"then":{"minLength":2}}`, `5`, ""},
	{`{"if":{"type":"string"},"then":{"minLength":2}}`, `"a"`, "is shorter than 2"},
	// $ref
	{`{"$defs":{"pos":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/$defs/pos"}}}`, `{"n":1}`, ""},
	{`{"$defs":{"pos":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/$defs/pos"}}}`, `{"n":0}`, "/n: 0 is less than the minimum 1"},
	{`{"type":"object","properties":{"next":{"$ref":"#"}},"additionalProperties":false}`, `{"next":{"next":{}}}`, ""},
	{`{"type":"object","properties":{"next":{"$ref":"#"}},"additionalProperties":false}`, `{"next":{"next":{"x":1}}}`, "/next/next/x: property is not allowed"},
	{`{"$ref":"#/$defs/missing"}`, `1`, `cannot resolve $ref "#/$defs/missing"`},
	{`{"$ref":"https://example.com/schema"}`, `1`, "cannot resolve $ref"},
	{`{"$defs":{"a b":{"type":"string"}},"$ref":"#/$defs/a%20b"}`, `1`, "got number, want string"},
	{`{"$defs":{"a/b":{"type":"string"}},"$ref":"#/$defs/a~1b"}`, `"s"`, ""},
	{`{"$defs":{"a/b":{"type":"string"}},"$ref":"#/$defs/a~1b"}`, `1`, "got number, want string"},
	{`{"$ref":"#/$defs/s","maxLength":2,"$defs":{"s":{"type":"string"}}}`, `"abc"`, "longer than 2"},
	// format
	{`{"format":"date-time"}`, `"2024-05-01T10:20:30Z"`, ""},
	{`{"format":"date-time"}`, `"2024-05-01t10:20:30.5+02:00"`, ""},
	{`{"format":"date-time"}`, `"2024-05-01 10:20:30"`, "is not a valid date-time"},
	{`{"format":"date-time"}`, `"2024-13-01T10:20:30Z"`, "is not a valid date-time"},
	{`{"format":"date"}`, `"2024-02-29"`, ""},
	{`{"format":"date"}`, `"2023-02-29"`, "is not a valid date"},
	{`{"format":"uri"}`, `"https://example.com/a?b=c#d"`, ""},
	{`{"format":"uri"}`, `"urn:isbn:0451450523"`, ""},
	{`{"format":"uri"}`, `"/relative/path"`, "is not a valid uri"},
	{`{"format":"uri"}`, `"http://exa mple.com"`, "is not a valid uri"},
	{`{"format":"email"}`, `"ada@example.com"`, ""},
	{`{"format":"email"}`, `"Ada <ada@example.com>"`, "is not a valid email"},
	{`{"format":"email"}`, `"not-an-address"`, "is not a valid email"},
	{`{"format":"color"}`, `"whatever"`, ""},
	{`{"format":"date"}`, `20240229`, ""},
	// boolean schemas
	{`true`, `{"anything":[1]}`, ""},
	{`false`, `null`, "no value is allowed here"},
	{`{"properties":{"gone":false}}`, `{"other":1}`, ""},
	{`{"properties":{"gone":false}}`, `{"gone":1}`, "/gone: no value is allowed here"},
	{`{"not":{}}`, `1`, "must not match the schema in not"},
	// several problems at once, sorted by path
	{`{"type":"object","properties":{"count":{"type":"integer","maximum":100},"name":{"type":"string"}},"required":["name"]}`, `{"count":150}`,
		"/count: 150 is greater than the maximum 100; /name: required property missing"},
	{`{"items":{"type":"integer"}}`, `[{"a":1},"x"]`, "/0: got object, want integer; /1: got string, want integer"},
	// unknown keywords are ignored
	{`{"type":"string","x-mcp-header":"City","contains":{"const":1}}`, `"Oslo"`, ""},
}

func TestSchemaValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range schemaValidatorCases {
		var s Schema
		if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
			t.Fatalf("schema %s: %v", tc.schema, err)
		}
		instance, err := schemaDecodeAny([]byte(tc.instance))
		if err != nil {
			t.Fatalf("instance %s: %v", tc.instance, err)
		}
		err = s.Validate(instance)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("schema %s, instance %s: unexpected error: %v", tc.schema, tc.instance, err)
		case tc.err != "" && err == nil:
			t.Errorf("schema %s, instance %s: valid, want error containing %q", tc.schema, tc.instance, tc.err)
		case tc.err != "" && !strings.Contains(err.Error(), tc.err):
			t.Errorf("schema %s, instance %s: error %q does not contain %q", tc.schema, tc.instance, err, tc.err)
		}
	}
}

// TestSchemaValidateKeywordsCovered checks that every keyword the validator supports has
// both an accepting and a rejecting case in schemaValidatorCases.
func TestSchemaValidateKeywordsCovered(t *testing.T) {
	keywords := []string{"type", "enum", "const", "properties", "required", "additionalProperties",
		"patternProperties", "items", "prefixItems", "minItems", "maxItems", "uniqueItems", "minLength",
		"maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
		"minProperties", "maxProperties", "anyOf", "oneOf", "allOf", "not", "if", "$ref", "format"}
	for _, keyword := range keywords {
		var accepts, rejects bool
		for _, tc := range schemaValidatorCases {
			if strings.Contains(tc.schema, `"`+keyword+`"`) {
				accepts = accepts || tc.err == ""
				rejects = rejects || tc.err != ""
			}
		}
		if !accepts || !rejects {
			t.Errorf("keyword %s: accepting case %v, rejecting case %v", keyword, accepts, rejects)
		}
	}
	if n := len(schemaValidatorCases); n < 120 {
		t.Errorf("%d validator cases, want at least 120", n)
	}
}

func TestSchemaValidateGoValues(t *testing.T) {
	s := &Schema{Type: "object", Properties: map[string]*Schema{
		"n": {Type: "integer", Maximum: schemaTestPtr(10.0)},
		"f": {Type: "number"},
	}}
	if err := s.Validate(map[string]any{"n": 3, "f": float32(1.5)}); err != nil {
		t.Error(err)
	}
	if err := s.Validate(map[string]any{"n": 3.5}); err == nil || !strings.Contains(err.Error(), "want integer") {
		t.Errorf("got %v, want an integer error", err)
	}
	if err := s.Validate(map[string]any{"n": uint64(11)}); err == nil || !strings.Contains(err.Error(), "greater than the maximum 10") {
		t.Errorf("got %v, want a maximum error", err)
	}
	if err := s.Validate(map[string]any{"n": []string{"typed slice"}}); err == nil || !strings.Contains(err.Error(), "unsupported Go type []string") {
		t.Errorf("got %v, want an unsupported-type error", err)
	}
	var nilSchema *Schema
	if err := nilSchema.Validate(42); err != nil {
		t.Errorf("nil schema: %v", err)
	}
}

func TestSchemaValidateErrorLimit(t *testing.T) {
	s := &Schema{Items: &Schema{Type: "string"}}
	items := make([]any, 500)
	for i := range items {
		items[i] = json.Number("1")
	}
	err := s.Validate(items)
	if err == nil {
		t.Fatal("no error")
	}
	var verr *schemaValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %T is not a *schemaValidationError", err)
	}
	if n := len(verr.problems); n != schemaShownProblems+1 {
		t.Errorf("%d parts, want %d", n, schemaShownProblems+1)
	}
	if !strings.HasSuffix(err.Error(), "and more than 80 other problems") {
		t.Errorf("error ends %q", err.Error()[len(err.Error())-60:])
	}
}

// TestSchemaValidateLimits feeds values and schemas meant to exhaust the stack or the
// CPU; each must end promptly with an error.
func TestSchemaValidateLimits(t *testing.T) {
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	cases := []struct {
		name, schema, instance, err string
	}{
		{"deep value", `{"items":{"$ref":"#"}}`, deep, "nests deeper than 64 levels"},
		{"deep value, no recursion in schema", `{"type":"array"}`, deep, ""},
		{"ref loop", `{"$ref":"#"}`, `1`, "nests $ref or combinators deeper than 64"},
		{"def loop", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `1`, "deeper than 64"},
		{"exponential anyOf", `{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}`, `1`, "validation stopped"},
		{"exponential oneOf", `{"oneOf":[{"$ref":"#"},{"$ref":"#"},{"$ref":"#"}]}`, `1`, "validation stopped"},
		{"deep unique items", `{"uniqueItems":true}`, "[" + deep + "," + deep + "]", "cannot be compared"},
		{"deep enum", `{"enum":[` + deep + `]}`, deep, "is not one of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s Schema
			if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
				t.Fatal(err)
			}
			instance, err := schemaDecodeAny([]byte(tc.instance))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Validate(instance)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want an error containing %q", err, tc.err)
			}
		})
	}
	// Thirty nested anyOf pairs that all fail stay below the depth limits; only the step
	// budget stops their 2^30 evaluations.
	defs := map[string]*Schema{"d30": {Type: "string"}}
	for i := range 30 {
		next := &Schema{Ref: "#/$defs/d" + strconv.Itoa(i+1)}
		defs["d"+strconv.Itoa(i)] = &Schema{AnyOf: []*Schema{next, next}}
	}
	wide := &Schema{Ref: "#/$defs/d0", Defs: defs}
	if err := wide.Validate(json.Number("1")); err == nil || !strings.Contains(err.Error(), "steps") {
		t.Errorf("got %v, want the step budget to stop validation", err)
	}
	// Defaults on a recursive schema stop at their budget too.
	var s Schema
	if err := json.Unmarshal([]byte(`{"properties":{"a":{"$ref":"#","default":{}},"b":{"$ref":"#","default":{}}}}`), &s); err != nil {
		t.Fatal(err)
	}
	s.applyDefaults(map[string]any{})
}

func TestSchemaDefaults(t *testing.T) {
	var s Schema
	doc := `{
		"type": "object",
		"properties": {
			"limit": {"type": "integer", "default": 10},
			"sort": {"type": "string", "default": "relevance"},
			"filter": {
				"type": "object",
				"default": {},
				"properties": {"lang": {"type": "string", "default": "en"}, "since": {"type": "string"}}
			},
			"page": {"$ref": "#/$defs/page"},
			"tags": {"type": "array", "items": {"type": "object", "properties": {"x": {"default": 1}}}}
		},
		"required": ["limit"],
		"$defs": {"page": {"type": "object", "default": {"size": 20}, "properties": {"size": {"type": "integer"}, "token": {"type": "string", "default": ""}}}}
	}`
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, want string }{
		{``, `{"filter":{"lang":"en"},"limit":10,"page":{"size":20,"token":""},"sort":"relevance"}`},
		{`null`, `{"filter":{"lang":"en"},"limit":10,"page":{"size":20,"token":""},"sort":"relevance"}`},
		{`{"limit":3,"filter":{"since":"x"},"page":{"size":5},"tags":[{}]}`, `{"filter":{"lang":"en","since":"x"},"limit":3,"page":{"size":5,"token":""},"sort":"relevance","tags":[{}]}`},
		{`{"limit":3.0,"sort":"<new>","filter":{"lang":"nl"},"page":{"size":1,"token":"t"}}`, `{"limit":3.0,"sort":"<new>","filter":{"lang":"nl"},"page":{"size":1,"token":"t"}}`},
	}
	for _, tc := range cases {
		got, err := validateArguments(&s, json.RawMessage(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
	// Defaults are fresh copies: changing one result must not change the next.
	first, _ := validateArguments(&s, nil)
	firstValue, _ := schemaDecodeAny(first)
	firstValue.(map[string]any)["filter"].(map[string]any)["lang"] = "changed"
	second, _ := validateArguments(&s, nil)
	if !strings.Contains(string(second), `"lang":"en"`) {
		t.Errorf("defaults shared between calls: %s", second)
	}
	// applyDefaults works on decoded values directly and leaves non-objects alone.
	value := s.applyDefaults(map[string]any{"limit": json.Number("1")})
	if value.(map[string]any)["sort"] != "relevance" {
		t.Errorf("applyDefaults gave %v", value)
	}
	if s.applyDefaults("text") != "text" {
		t.Error("applyDefaults changed a string")
	}
}

func TestValidateArguments(t *testing.T) {
	s, err := SchemaFor[schemaBenchArgs]()
	if err != nil {
		t.Fatal(err)
	}
	// Without defaults, valid arguments come back as the very same bytes.
	raw := json.RawMessage(`{ "city": "Oslo",  "days": 3, "units": "metric", "detailed": true, "lang": "nb" }`)
	got, err := validateArguments(s, raw)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &raw[0] {
		t.Error("arguments were re-encoded although the schema has no defaults")
	}
	cases := []struct{ in, err string }{
		{`{"city":"Oslo","days":30}`, "arguments: /days: 30 is greater than the maximum 14"},
		{`{"days":3}`, "arguments: /city: required property missing"},
		{`{"city":"Oslo","days":1,"colour":"red"}`, "arguments: /colour: property is not allowed"},
		{`[1]`, "arguments: got array, want object"},
		{`{"city":`, "arguments: unexpected EOF"},
		{`{} {}`, "arguments: unexpected data after the JSON value"},
		{``, "arguments: /city: required property missing; /days: required property missing"},
	}
	for _, tc := range cases {
		_, err := validateArguments(s, json.RawMessage(tc.in))
		if err == nil || err.Error() != tc.err {
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.err)
		}
	}
	var verr *schemaValidationError
	if _, err := validateArguments(s, json.RawMessage(`{}`)); !errors.As(err, &verr) {
		t.Errorf("error %v does not wrap the validation error", err)
	}
	if got, err := validateArguments(nil, nil); err != nil || string(got) != "{}" {
		t.Errorf("nil schema: %s, %v", got, err)
	}
}

func BenchmarkValidate(b *testing.B) {
	s, err := SchemaFor[schemaBenchArgs]()
	if err != nil {
		b.Fatal(err)
	}
	raw := json.RawMessage(`{"city":"Oslo","days":3,"units":"metric","detailed":true,"lang":"nb"}`)
	b.Run("decoded", func(b *testing.B) {
		value, err := schemaDecodeAny(raw)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("arguments", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := validateArguments(s, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func FuzzValidate(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"integer","minimum":1}},"required":["a"]}`, `{"a":0}`)
	f.Add(`{"anyOf":[{"$ref":"#"},{"items":{"$ref":"#/$defs/x"}}],"$defs":{"x":{"uniqueItems":true}}}`, `[[1,1.0],[{}]]`)
	f.Add(`{"patternProperties":{"^a":{"multipleOf":0.1}},"additionalProperties":false}`, `{"ab":0.3,"c":1}`)
	f.Add(`{"if":{"const":null},"then":false,"else":{"format":"date-time","pattern":"(x"}}`, `"2024-01-01T00:00:00Z"`)
	f.Add(`{"properties":{"d":{"default":{"e":[1]},"properties":{"e":{"maxItems":0}}}}}`, `{}`)
	f.Add(`false`, `null`)
	f.Fuzz(func(t *testing.T, schemaJSON, instanceJSON string) {
		var s Schema
		if err := json.Unmarshal([]byte(schemaJSON), &s); err != nil {
			return
		}
		instance, err := schemaDecodeAny([]byte(instanceJSON))
		if err != nil {
			return
		}
		_ = s.Validate(instance)
		_ = s.applyDefaults(instance)
		_, _ = validateArguments(&s, json.RawMessage(instanceJSON))
		// A decoded schema always encodes, and a second round trip changes nothing.
		once, err := json.Marshal(&s)
		if err != nil {
			t.Fatalf("decoded schema does not encode: %v", err)
		}
		var again Schema
		if err := json.Unmarshal(once, &again); err != nil {
			t.Fatalf("encoded schema %s does not decode: %v", once, err)
		}
		twice, err := json.Marshal(&again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("round trip is not stable:\n%s\n%s", once, twice)
		}
	})
}
