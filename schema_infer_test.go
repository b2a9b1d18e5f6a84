package mcp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

type schemaTestPlain struct {
	Name       string  `json:"name"`
	Count      int     `json:"count"`
	Ratio      float64 `json:"ratio"`
	Enabled    bool    `json:"enabled"`
	Skipped    string  `json:"-"`
	Dash       string  `json:"-,"`
	Untagged   string
	unexported string
}

type schemaTestOptional struct {
	Required  string    `json:"required"`
	Empty     string    `json:"empty,omitempty"`
	Zero      time.Time `json:"zero,omitzero"`
	Pointer   *int      `json:"pointer"`
	Quoted    int       `json:"quoted,string"`
	QuotedPtr *bool     `json:"quotedPtr,string,omitempty"`
}

type SchemaTestBase struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

type SchemaTestNote struct {
	Note string `json:"note"`
}

type SchemaTestLeft struct {
	Dup  string
	Left string `json:"left"`
}

type SchemaTestRight struct {
	Dup string
}

type schemaTestEmbedded struct {
	SchemaTestBase
	*SchemaTestNote
	SchemaTestLeft
	SchemaTestRight
	ID   int    `json:"id"` // shadows SchemaTestBase.ID: the shallower field wins
	Name string `json:"name"`
}

type schemaTestAddress struct {
	Street string `json:"street"`
	City   string `json:"city"`
}

type schemaTestNested struct {
	Home   schemaTestAddress  `json:"home"`
	Work   *schemaTestAddress `json:"work,omitempty"`
	Inline struct {
		X int `json:"x"`
	} `json:"inline"`
}

type schemaTestCollections struct {
	Names  []string                     `json:"names"`
	Matrix [][]float64                  `json:"matrix"`
	Triple [3]int                       `json:"triple"`
	Counts map[string]int               `json:"counts"`
	People map[string]schemaTestAddress `json:"people"`
	ByID   map[int]bool                 `json:"byId"`
	Ptrs   []*schemaTestAddress         `json:"ptrs"`
}

type schemaTestCustomJSON struct{ n int }

func (c schemaTestCustomJSON) MarshalJSON() ([]byte, error) { return json.Marshal(c.n) }

type schemaTestText int

func (schemaTestText) MarshalText() ([]byte, error) { return []byte("text"), nil }

type schemaTestSpecial struct {
	When     time.Time            `json:"when"`
	WhenPtr  *time.Time           `json:"whenPtr"`
	Raw      json.RawMessage      `json:"raw"`
	Any      any                  `json:"any"`
	Bytes    []byte               `json:"bytes"`
	Unsigned uint16               `json:"unsigned"`
	Duration time.Duration        `json:"duration"`
	Custom   schemaTestCustomJSON `json:"custom"`
	Text     schemaTestText       `json:"text"`
}

type schemaTestTree struct {
	Value    string            `json:"value"`
	Children []*schemaTestTree `json:"children,omitempty"`
}

type schemaTestForest struct {
	Trees []schemaTestTree `json:"trees"`
	Best  *schemaTestTree  `json:"best,omitempty"`
}

type schemaTestPerson struct {
	Name     string             `json:"name"`
	Employer *schemaTestCompany `json:"employer,omitempty"`
}

type schemaTestCompany struct {
	Name  string             `json:"name"`
	Staff []schemaTestPerson `json:"staff"`
}

type schemaTestDirectory struct {
	People []schemaTestPerson `json:"people"`
}

type schemaTestList[T any] struct {
	Head T                  `json:"head"`
	Tail *schemaTestList[T] `json:"tail,omitempty"`
}

type schemaTestLists struct {
	Ints schemaTestList[int] `json:"ints"`
}

type schemaTestTagged struct {
	Query   string   `json:"query" description:"What to search for." schema:"minLength=1,maxLength=200"`
	Limit   int      `json:"limit" schema:"minimum=1,maximum=100,default=10"`
	Sort    string   `json:"sort,omitempty" schema:"enum=relevance|date|title,default=relevance"`
	Ratio   float64  `json:"ratio" schema:"exclusiveMinimum=0,exclusiveMaximum=1"`
	Level   uint8    `json:"level" schema:"enum=1|2|3"`
	Strict  bool     `json:"strict" schema:"enum=true|false,optional"`
	Code    string   `json:"code" schema:"title=Code,pattern=^[A-Z]{2,3}(-[0-9]+)?$"`
	Email   string   `json:"email" schema:"format=email"`
	Day     string   `json:"day,omitempty" schema:"format=date,required"`
	Tags    []string `json:"tags" schema:"minItems=1,maxItems=5,optional"`
	Extra   any      `json:"extra,omitempty" schema:"enum=1|\"a\"|null|plain"`
	Options []int    `json:"options" schema:"default=[1, 2, 3]"`
	Note    *string  `json:"note" description:"Free text, commas allowed." schema:"default=n/a, or none"`
}

var schemaGoldenCatalogue = []struct {
	name string
	typ  reflect.Type
}{
	{"plain", reflect.TypeFor[schemaTestPlain]()},
	{"optional", reflect.TypeFor[schemaTestOptional]()},
	{"embedded", reflect.TypeFor[schemaTestEmbedded]()},
	{"nested", reflect.TypeFor[schemaTestNested]()},
	{"collections", reflect.TypeFor[schemaTestCollections]()},
	{"special", reflect.TypeFor[schemaTestSpecial]()},
	{"tree", reflect.TypeFor[*schemaTestTree]()},
	{"forest", reflect.TypeFor[schemaTestForest]()},
	{"mutual", reflect.TypeFor[schemaTestPerson]()},
	{"directory", reflect.TypeFor[schemaTestDirectory]()},
	{"generic", reflect.TypeFor[schemaTestLists]()},
	{"tagged", reflect.TypeFor[schemaTestTagged]()},
	{"scalar_uint", reflect.TypeFor[uint]()},
	{"scalar_slice", reflect.TypeFor[[]string]()},
	{"scalar_map", reflect.TypeFor[map[string]schemaTestAddress]()},
	{"scalar_any", reflect.TypeFor[any]()},
}

func TestSchemaGolden(t *testing.T) {
	for _, tc := range schemaGoldenCatalogue {
		t.Run(tc.name, func(t *testing.T) {
			s, err := schemaForType(tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(s, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			file := filepath.Join("testdata", "schema_golden", tc.name+".json")
			if schemaTestUpdating() {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("schema differs from %s (run with -update to accept):\n%s", file, got)
			}
			// The inferred schema must survive a decode/encode round trip unchanged.
			var decoded Schema
			if err := json.Unmarshal(got, &decoded); err != nil {
				t.Fatal(err)
			}
			again, err := json.MarshalIndent(&decoded, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(append(again, '\n'), got) {
				t.Errorf("round trip changed the schema:\n%s", again)
			}
		})
	}
}

// TestSchemaInferredValidates checks inferred schemas against what encoding/json really
// produces for values of those types. Nil slices, maps and pointers without omitempty
// encode as null, which the inferred schemas do not allow, so the values here have none.
func TestSchemaInferredValidates(t *testing.T) {
	note := "x"
	one := 1
	values := []any{
		schemaTestPlain{Name: "a", Count: 2},
		schemaTestOptional{Required: "r", Pointer: &one, Quoted: 5},
		schemaTestEmbedded{SchemaTestNote: &SchemaTestNote{Note: "n"}, ID: 3},
		schemaTestNested{Work: &schemaTestAddress{City: "Oslo"}},
		schemaTestCollections{Names: []string{"a"}, Matrix: [][]float64{{1.5}}, Counts: map[string]int{"a": 1}, People: map[string]schemaTestAddress{"p": {}}, ByID: map[int]bool{7: true}, Ptrs: []*schemaTestAddress{{}}},
		schemaTestSpecial{WhenPtr: &time.Time{}, Raw: json.RawMessage(`{"free":true}`), Any: []int{1}, Bytes: []byte("hi"), Unsigned: 9, Custom: schemaTestCustomJSON{4}},
		&schemaTestTree{Value: "root", Children: []*schemaTestTree{{Value: "leaf", Children: []*schemaTestTree{{Value: "deeper"}}}}},
		schemaTestForest{Trees: []schemaTestTree{{Value: "t"}}, Best: &schemaTestTree{Value: "b"}},
		schemaTestPerson{Name: "p", Employer: &schemaTestCompany{Name: "c", Staff: []schemaTestPerson{{Name: "q"}}}},
		schemaTestDirectory{People: []schemaTestPerson{{Name: "p"}}},
		schemaTestLists{Ints: schemaTestList[int]{Head: 1, Tail: &schemaTestList[int]{Head: 2}}},
		schemaTestTagged{Query: "q", Limit: 5, Ratio: 0.5, Level: 2, Code: "AB-1", Email: "a@b.example", Day: "2024-02-29", Tags: []string{"x"}, Options: []int{1}, Note: &note},
	}
	for _, value := range values {
		s, err := schemaForType(reflect.TypeOf(value))
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(value)
		if err != nil {
			t.Fatal(err)
		}
		instance, err := schemaDecodeAny(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(instance); err != nil {
			t.Errorf("%T: %s does not validate: %v", value, data, err)
		}
	}
}

func TestSchemaForCached(t *testing.T) {
	a, err := SchemaFor[schemaTestTagged]()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SchemaFor[schemaTestTagged]()
	if a != b {
		t.Error("SchemaFor returned a different *Schema for the same type")
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = SchemaFor[schemaTestTagged]() }); allocs != 0 {
		t.Errorf("cached SchemaFor allocates %v times, want 0", allocs)
	}
}

func TestSchemaDefNameClash(t *testing.T) {
	type node struct {
		Next *node `json:"next,omitempty"`
	}
	other := func() reflect.Type {
		type node struct {
			Prev *node `json:"prev,omitempty"`
		}
		return reflect.TypeFor[node]()
	}()
	pair := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[node](), Tag: `json:"a"`},
		{Name: "B", Type: other, Tag: `json:"b"`},
	})
	s, err := schemaForType(pair)
	if err != nil {
		t.Fatal(err)
	}
	if s.Properties["a"].Ref != "#/$defs/node" || s.Properties["b"].Ref != "#/$defs/node_2" {
		t.Errorf("refs %q and %q", s.Properties["a"].Ref, s.Properties["b"].Ref)
	}
	if s.Defs["node"].Properties["next"] == nil || s.Defs["node_2"].Properties["prev"] == nil {
		t.Errorf("defs %v", s.Defs)
	}
}

func TestToolInputSchema(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[schemaTestPlain](), reflect.TypeFor[*schemaTestPlain](), reflect.TypeFor[map[string]int]()} {
		if _, err := toolInputSchema(typ); err != nil {
			t.Errorf("%v: %v", typ, err)
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[int](), reflect.TypeFor[[]string](), reflect.TypeFor[any](), reflect.TypeFor[json.RawMessage]()} {
		if _, err := toolInputSchema(typ); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("%v: got %v, want a not-an-object error", typ, err)
		}
	}
}

func TestSchemaTagErrors(t *testing.T) {
	cases := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[struct {
			A int `schema:"minimun=1"`
		}](), `field struct.A: schema tag: minimun: unknown keyword`},
		{reflect.TypeFor[struct {
			A int `schema:"minimum=abc"`
		}](), `minimum: "abc" is not a number`},
		{reflect.TypeFor[struct {
			A int `schema:"minimum"`
		}](), `minimum needs a value`},
		{reflect.TypeFor[struct {
			A string `schema:"minimum=1"`
		}](), `minimum: applies to number or integer fields, not string`},
		{reflect.TypeFor[struct {
			A int `schema:"minLength=1"`
		}](), `minLength: applies to string fields, not integer`},
		{reflect.TypeFor[struct {
			A string `schema:"minItems=1"`
		}](), `minItems: applies to array fields, not string`},
		{reflect.TypeFor[struct {
			A string `schema:"maxLength=-1"`
		}](), `"-1" is not a non-negative integer`},
		{reflect.TypeFor[struct {
			A string `schema:"pattern=("`
		}](), `pattern: error parsing regexp`},
		{reflect.TypeFor[struct {
			A int `schema:"enum=1|x"`
		}](), `enum: "x" is not an integer`},
		{reflect.TypeFor[struct {
			A bool `schema:"enum=yes"`
		}](), `"yes" is not a boolean`},
		{reflect.TypeFor[struct {
			A float64 `schema:"enum=NaN"`
		}](), `"NaN" is not a number`},
		{reflect.TypeFor[struct {
			A []int `schema:"enum=1"`
		}](), `enum: applies to scalar fields, not array`},
		{reflect.TypeFor[struct {
			A int `schema:"default=ten"`
		}](), `default: "ten" is not a JSON value`},
		{reflect.TypeFor[struct {
			A int `schema:"minimum=5,default=1"`
		}](), `default 1 does not satisfy the field's schema: 1 is less than the minimum 5`},
		{reflect.TypeFor[struct {
			A string `schema:"enum=a|b,default=c"`
		}](), `default "c" does not satisfy the field's schema`},
		{reflect.TypeFor[struct {
			A int `schema:"maximum=2,enum=1|3"`
		}](), `enum value 3 does not satisfy the field's schema: 3 is greater than the maximum 2`},
		{reflect.TypeFor[struct {
			A string `schema:"required=yes"`
		}](), `required takes no value`},
		{reflect.TypeFor[struct {
			A string `schema:"required,optional"`
		}](), `both required and optional`},
		{reflect.TypeFor[struct {
			A string `schema:"title=a,title=b"`
		}](), `title appears twice`},
		{reflect.TypeFor[struct {
			A chan int
		}](), `field struct.A: unsupported type chan int`},
		{reflect.TypeFor[struct {
			A map[[2]int]string
		}](), `unsupported map key type [2]int`},
		{reflect.TypeFor[struct {
			Inner struct {
				B func()
			}
		}](), `field struct.Inner: field struct.B: unsupported type func()`},
		{reflect.TypeFor[complex128](), `unsupported type complex128`},
	}
	for _, tc := range cases {
		_, err := schemaForType(tc.typ)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got error %v, want one containing %q", tc.typ, err, tc.want)
		}
	}
	// A bad tag is cached as an error too, and never panics.
	if _, err := SchemaFor[struct {
		A int `schema:"bogus"`
	}](); err == nil {
		t.Error("no error for an unknown keyword")
	}
}

func TestSchemaTagRules(t *testing.T) {
	type args struct {
		Plain    string  `json:"plain" schema:"default=text"`
		Quoted   string  `json:"quoted" schema:"default=\"text\""`
		Forced   string  `json:"forced,omitempty" schema:"required"`
		Spaced   int     `json:"spaced" schema:" minimum=1 , maximum=9 ,"`
		Bigint   uint64  `json:"bigint" schema:"enum=18446744073709551615"`
		Number   float64 `json:"number" schema:"enum=1.50|2e3"`
		Commas   string  `json:"commas" schema:"minLength=1,pattern=^a{1,2}$"`
		FieldAny any     `json:"any" schema:"default={\"k\": [1, 2]}"`
	}
	s, err := SchemaFor[args]()
	if err != nil {
		t.Fatal(err)
	}
	props := s.Properties
	checks := []struct {
		got, want any
	}{
		{string(props["plain"].Default), `"text"`},
		{string(props["quoted"].Default), `"text"`},
		{strings.Join(s.Required, ","), "forced,spaced,bigint,number,commas"},
		{*props["spaced"].Minimum, 1.0},
		{*props["spaced"].Maximum, 9.0},
		{props["bigint"].Enum[0], json.Number("18446744073709551615")},
		{props["number"].Enum[0], json.Number("1.5")},
		{props["number"].Enum[1], json.Number("2000")},
		{props["commas"].Pattern, "^a{1,2}$"},
		{string(props["any"].Default), `{"k":[1,2]}`},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: got %v, want %v", i, c.got, c.want)
		}
	}
}

func BenchmarkSchemaInfer(b *testing.B) {
	if _, err := SchemaFor[schemaBenchArgs](); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SchemaFor[schemaBenchArgs](); err != nil {
			b.Fatal(err)
		}
	}
}
