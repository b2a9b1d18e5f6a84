package mcp

import (
	"context"
	"errors"
	"testing"
)

func TestResources(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, version, carrier string) {
		cl := connectOver(t, featureServer(), carrier, version)
		ctx := context.Background()
		list, err := cl.ListResources(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Resources) != 2 || list.Resources[0].URI != "test://static-text" || list.Resources[1].Name != "static-binary" || list.NextCursor != "" {
			t.Fatalf("resources/list: %+v", list)
		}
		templates, err := cl.ListResourceTemplates(ctx, "")
		if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "test://items/{id}" {
			t.Fatalf("resources/templates/list: %+v %v", templates, err)
		}
		reads := []struct {
			uri, wantText, wantBlob string
			wantCode                int
		}{
			{uri: "test://static-text", wantText: "static text"},
			{uri: "test://static-binary", wantBlob: "iVBORw0KGgo="},
			{uri: "test://items/42", wantText: "item 42"},
			{uri: "test://items/missing", wantCode: notFoundCode(version)},
			{uri: "test://nowhere", wantCode: notFoundCode(version)},
		}
		for _, r := range reads {
			res, err := cl.ReadResource(ctx, r.uri)
			if r.wantCode != 0 {
				var rpcErr *Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != r.wantCode || !jsonEqual(string(rpcErr.Data), `{"uri":"`+r.uri+`"}`) {
					t.Errorf("read %s: %v, want code %d with data.uri", r.uri, err, r.wantCode)
				}
				continue
			}
			if err != nil {
				t.Errorf("read %s: %v", r.uri, err)
				continue
			}
			if len(res.Contents) != 1 || res.Contents[0].URI != r.uri || res.Contents[0].Text != r.wantText || res.Contents[0].Blob != r.wantBlob {
				t.Errorf("read %s: %+v", r.uri, res.Contents)
			}
		}
	})
}

func notFoundCode(version string) int {
	if isModernVersion(version) {
		return CodeInvalidParams
	}
	return CodeResourceNotFound
}
