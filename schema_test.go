package mcp

import (
	"encoding/json"
	"flag"
	"strings"
	"sync"
	"testing"
)

// The -update flag rewrites golden files. It is defined only if no other test file of the
// package defines it first, so that files can share it.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func schemaTestUpdating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func TestSchemaRoundTrip(t *testing.T) {
	docs := []string{
		`true`,
		`false`,
		`{}`,
		`{"not":{}}`,
		`{"not":true}`,
		`{"items":false,"additionalProperties":true}`,
		`{"type":["string","null"]}`,
		`{"type":["integer"]}`,
		`{"type":[]}`,
		`{"const":null}`,
		`{"enum":[]}`,
		`{"enum":[1.50,"a",null,{"k":[true]}],"default":{"b":1,"a":2}}`,
		`{"type":"object","properties":{"zeta":{"type":"string","x-mcp-header":"Zeta"},"alpha":{"type":"integer"},"mid":false},"required":["zeta"],"additionalProperties":false}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"urn:x","$ref":"#/$defs/a","$defs":{"a":{"type":"string"}}}`,
		`{"minimum":0,"exclusiveMinimum":true}`,
		`{"items":[{"type":"string"},{"type":"number"}]}`,
		`{"minLength":1.5,"properties":{"a":5},"required":"yes","title":null}`,
		`{"$comment":"kept","contains":{"const":1},"definitions":{"x":{}},"x-big":123456789012345678901234567890}`,
		`{"description":"a <b> & c","format":"uri","contentEncoding":"base64","pattern":"^[a-z]+$","minLength":1,"maxLength":9}`,
		`{"maximum":1e+21,"exclusiveMaximum":-3.5,"multipleOf":0.01}`,
		`{"prefixItems":[{},true],"minItems":0,"maxItems":3,"uniqueItems":true}`,
		`{"patternProperties":{"^x-":{}},"minProperties":1,"maxProperties":2}`,
		`{"allOf":[true],"anyOf":[false],"oneOf":[{}],"not":{"type":"null"},"if":true,"then":false,"else":{}}`,
		`{"readOnly":true,"deprecated":true,"examples":[1,"two"]}`,
		`{"properties":{"a":null}}`,
	}
	for _, doc := range docs {
		var s Schema
		if err := json.Unmarshal([]byte(doc), &s); err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		got, err := schemaMarshal(&s) // as json.Marshal, without escaping <, > and &
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if string(got) != doc {
			t.Errorf("round trip changed the schema:\n got %s\nwant %s", got, doc)
		}
	}
}

func TestSchemaDecode(t *testing.T) {
	var s Schema
	doc := `{"type":["string","null"],"const":null,"exclusiveMinimum":true,"x-mcp-header":"City","properties":{"b":{},"a":true}}`
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "" || strings.Join(s.Types, ",") != "string,null" {
		t.Errorf("Type %q, Types %q", s.Type, s.Types)
	}
	if s.Const == nil || *s.Const != nil {
		t.Errorf("Const = %v, want a pointer to nil", s.Const)
	}
	if s.ExclusiveMinimum != nil || s.Extra["exclusiveMinimum"] != true {
		t.Errorf("a draft-04 exclusiveMinimum should go to Extra, got %v / %v", s.ExclusiveMinimum, s.Extra)
	}
	if s.Extra["x-mcp-header"] != "City" {
		t.Errorf("Extra = %v", s.Extra)
	}
	if strings.Join(s.propertyOrder, ",") != "b,a" {
		t.Errorf("property order %v", s.propertyOrder)
	}
	var absent Schema
	_ = json.Unmarshal([]byte(`{}`), &absent)
	if absent.Const != nil {
		t.Error("absent const decoded as present")
	}
	for _, bad := range []string{`[]`, `"string"`, `1`} {
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s decoded as a schema", bad)
		}
	}
}

func TestSchemaMarshal(t *testing.T) {
	null := any(nil)
	cases := []struct {
		schema *Schema
		want   string
	}{
		{&Schema{}, `{}`},
		{FalseSchema(), `false`},
		{&Schema{Not: &Schema{}}, `{"not":{}}`},
		{&Schema{Const: &null}, `{"const":null}`},
		{&Schema{Types: []string{"string"}}, `{"type":["string"]}`},
		{&Schema{Type: "object", Properties: map[string]*Schema{"b": {}, "a": {}}, AdditionalProperties: FalseSchema()},
			`{"type":"object","properties":{"a":{},"b":{}},"additionalProperties":false}`},
		{&Schema{Minimum: schemaTestPtr(0.0), Extra: map[string]any{"x-b": 1, "x-a": []int{2}}}, `{"minimum":0,"x-a":[2],"x-b":1}`},
	}
	for _, tc := range cases {
		got, err := json.Marshal(tc.schema)
		if err != nil {
			t.Errorf("%s: %v", tc.want, err)
		} else if string(got) != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
	// Once a false schema is changed it is no longer false.
	changed := FalseSchema()
	changed.Description = "never"
	if got, _ := json.Marshal(changed); string(got) != `{"description":"never","not":{}}` {
		t.Errorf("changed false schema encodes as %s", got)
	}
	for _, bad := range []*Schema{
		{Type: "string", Types: []string{"null"}},
		{Type: "string", Extra: map[string]any{"type": "number"}},
		{Default: json.RawMessage(`{oops`)},
	} {
		if _, err := json.Marshal(bad); err == nil {
			t.Errorf("%+v encoded without error", bad)
		}
	}
}

// TestSchemaConcurrentUse validates with one shared schema from many goroutines, so that
// the race detector sees the lazily built caches.
func TestSchemaConcurrentUse(t *testing.T) {
	var s Schema
	if err := json.Unmarshal([]byte(`{"properties":{"a":{"pattern":"^a+$","default":"a"}},"patternProperties":{"^x":{"type":"integer"}}}`), &s); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := validateArguments(&s, json.RawMessage(`{"x1":1}`)); err != nil {
					t.Error(err)
				}
				if err := s.Validate(map[string]any{"a": "b"}); err == nil {
					t.Error("pattern not enforced")
				}
			}
		})
	}
	wg.Wait()
}

type schemaBenchArgs struct {
	City     string `json:"city" description:"City name." schema:"minLength=1,maxLength=100"`
	Days     int    `json:"days" schema:"minimum=1,maximum=14"`
	Units    string `json:"units,omitempty" schema:"enum=metric|imperial"`
	Detailed bool   `json:"detailed,omitempty"`
	Lang     string `json:"lang,omitempty" schema:"pattern=^[a-z]{2}$"`
}

func schemaTestPtr[T any](v T) *T { return &v }
