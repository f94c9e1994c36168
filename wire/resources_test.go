package wire_test

import (
	"slices"
	"testing"

	"github.com/groundhog-ai/groundhog/wire"
)

// FilterListPage keeps the kept items as they were, names the first and
// last kept in first_id/last_id (null when none) and leaves has_more,
// next_page and every other member alone; ReadListPage sees a body
// without a data array as no list.
func TestFilterListPage(t *testing.T) {
	page := []byte(`{"object":"list","data":[{"id":"a","x":1},{"id":"b"},{"id":"c","n":{"id":"b"}},{"noid":true}],"first_id":"a","last_id":"c","has_more":true,"next_page":"tok"}`)
	for _, c := range []struct {
		keep []string
		want string
	}{
		{[]string{"a", "c"}, `{"data":[{"id":"a","x":1},{"id":"c","n":{"id":"b"}}],"first_id":"a","has_more":true,"last_id":"c","next_page":"tok","object":"list"}`},
		{[]string{"b"}, `{"data":[{"id":"b"}],"first_id":"b","has_more":true,"last_id":"b","next_page":"tok","object":"list"}`},
		{nil, `{"data":[],"first_id":null,"has_more":true,"last_id":null,"next_page":"tok","object":"list"}`},
	} {
		got, err := wire.FilterListPage(page, func(id string) bool { return slices.Contains(c.keep, id) })
		if err != nil || string(got) != c.want {
			t.Errorf("keep %v: %s %v\nwant %s", c.keep, got, err, c.want)
		}
	}
	p, ok, err := wire.ReadListPage(page)
	if err != nil || !ok || !slices.Equal(p.IDs, []string{"a", "b", "c", ""}) || !p.HasMore || p.NextPage != "tok" || p.LastID != "c" {
		t.Errorf("read: %+v %v %v", p, ok, err)
	}
	if _, ok, err := wire.ReadListPage([]byte(`{"ok":true}`)); ok || err != nil {
		t.Errorf("an object without data read as a list: %v %v", ok, err)
	}
	if _, _, err := wire.ReadListPage([]byte(`[1]`)); err == nil {
		t.Errorf("a list that is not an object was read")
	}
}

func TestInputFileIDs(t *testing.T) {
	for _, c := range []struct {
		body string
		want []string
		bad  bool
	}{
		{`{"input_file_id":"file-1","endpoint":"/v1/chat/completions"}`, []string{"file-1"}, false},
		{`{"INPUT_FILE_ID":"file-1","input\u005ffile_id":"file-2"}`, []string{"file-1", "file-2"}, false},
		{`{"input_file_id":7}`, nil, false},
		{`{"endpoint":"x"}`, nil, false},
		{`[]`, nil, true},
		{`{`, nil, true},
	} {
		got, err := wire.InputFileIDs([]byte(c.body))
		slices.Sort(got)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v", c.body, got, err)
		}
	}
	if id := wire.UploadFileID([]byte(`{"id":"upload_1","file":{"id":"file-9"}}`)); id != "file-9" {
		t.Errorf("upload file id %q", id)
	}
	if id := wire.ResourceID([]byte(`{"id":5}`)); id != "" {
		t.Errorf("a non-string id read as %q", id)
	}
}

func TestFileRefs(t *testing.T) {
	for _, c := range []struct {
		body string
		want []string
	}{
		{`{"input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]}`, []string{"file-1"}},
		{`{"messages":[{"content":[{"type":"file","file":{"file\u005fid":"file-2"}}]}],"tools":[{"type":"code_interpreter","file_ids":["file-3",4]}]}`, []string{"file-2", "file-3"}},
		{`{"messages":[{"content":[{"type":"document","source":{"type":"file","file_id":"file_4"}}]}]}`, []string{"file_4"}},
		{`{"metadata":{"file_id":"x"},"tools":[{"parameters":{"properties":{"file_id":"y"}}},{"input_schema":{"file_id":"z"}}]}`, nil},
		{`{"messages":[{"content":[{"type":"tool_use","input":{"file_id":"x"}},{"type":"server_tool_use","input":{"file_id":"y"}}]}]}`, nil},
		{`{"file_id":7}`, nil},
		{`not json "file_id"`, nil},
	} {
		got := wire.FileRefs([]byte(c.body))
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.body, got, c.want)
		}
	}
}
