package config

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

var updateConfigDocs = flag.Bool("update-config-docs", false, "rewrite the key table of docs/reference/config.md")

const (
	configDoc   = "../docs/reference/config.md"
	beginMarker = "<!-- BEGIN KEYS: generated from the config definitions by config/reference_test.go -->"
	endMarker   = "<!-- END KEYS -->"
)

// fieldDocs reads the comments of the struct fields declared in files, by
// type and field name, reduced to their first sentence.
func fieldDocs(t *testing.T, files ...string) map[string]map[string]string {
	t.Helper()
	docs := map[string]map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			m := map[string]string{}
			for _, fl := range st.Fields.List {
				text := fl.Comment.Text()
				if fl.Doc != nil {
					text = fl.Doc.Text()
				}
				text = strings.Join(strings.Fields(text), " ")
				for _, name := range fl.Names {
					m[name.Name] = strings.ReplaceAll(text, "|", `\|`)
				}
			}
			docs[ts.Name.Name] = m
			return true
		})
	}
	return docs
}

// keyRow is one configuration key of the reference.
type keyRow struct{ key, typ, def, doc string }

func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return "duration"
	case t.Kind() == reflect.Pointer:
		return typeName(t.Elem())
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Slice:
		return "list"
	case t.Kind() == reflect.Map:
		return "map"
	}
	return t.Kind().String()
}

func defaultText(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "—"
		}
		v = v.Elem()
	}
	if d, ok := v.Interface().(time.Duration); ok {
		if d == 0 {
			return "`0`"
		}
		s := d.String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return "`" + s + "`"
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return "—"
		}
		return "`" + v.String() + "`"
	case reflect.Bool:
		return fmt.Sprintf("`%v`", v.Bool())
	case reflect.Slice, reflect.Map:
		return "—"
	}
	return fmt.Sprintf("`%v`", v.Interface())
}

// keyRows walks v's yaml-tagged fields: nested structs become dotted keys,
// maps of structs NAME, lists of structs [].
func keyRows(prefix string, v reflect.Value, docs map[string]map[string]string) []keyRow {
	var rows []keyRow
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		key := prefix + tag
		doc := docs[t.Name()][f.Name]
		if doc == "" && t.Name() == "YAMLPrice" {
			doc = "decimal dollars per million tokens (a string or a number)"
		}
		if doc == "" && len(rows) > 0 && i > 0 && strings.Contains(docs[t.Name()][t.Field(i-1).Name], f.Name) {
			doc = "see `" + rows[len(rows)-1].key + "`"
		}
		fv := v.Field(i)
		switch {
		case f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)):
			rows = append(rows, keyRows(key+".", fv, docs)...)
		case f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct:
			rows = append(rows, keyRow{key, "map", "—", doc})
			name := "NAME"
			if f.Type.Elem().Name() == "YAMLPrice" {
				name = "MODEL"
			}
			rows = append(rows, keyRows(key+"."+name+".", reflect.New(f.Type.Elem()).Elem(), docs)...)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			rows = append(rows, keyRow{key, "list", "—", doc})
			rows = append(rows, keyRows(key+"[].", reflect.New(f.Type.Elem()).Elem(), docs)...)
		default:
			rows = append(rows, keyRow{key, typeName(f.Type), defaultText(fv), doc})
		}
	}
	return rows
}

func keyTable(t *testing.T) string {
	docs := fieldDocs(t, "config.go", "compaction.go", "../pricing/pricing.go")
	rows := keyRows("", reflect.ValueOf(Default()), docs)
	var b strings.Builder
	b.WriteString(beginMarker + "\n\n| key | type | default | meaning |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.key, r.typ, r.def, r.doc)
	}
	b.WriteString("\n" + endMarker)
	return b.String()
}

// TestConfigReferenceCurrent: the key table of docs/reference/config.md
// lists every key of the configuration file with its type and default, as
// the definitions in this package say. After adding or changing a key, run
// `go test ./config -run TestConfigReferenceCurrent -update-config-docs`.
func TestConfigReferenceCurrent(t *testing.T) {
	data, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated key table markers", configDoc)
	}
	want := keyTable(t)
	got := doc[i : j+len(endMarker)]
	if got == want {
		return
	}
	if *updateConfigDocs {
		if err := os.WriteFile(configDoc, []byte(doc[:i]+want+doc[j+len(endMarker):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := 0; k < len(wl); k++ {
		if k >= len(gl) || gl[k] != wl[k] {
			t.Fatalf("docs/reference/config.md is stale (first difference):\n doc:  %s\n code: %s\nrun go test ./config -run TestConfigReferenceCurrent -update-config-docs", at(gl, k), wl[k])
		}
	}
	t.Fatalf("docs/reference/config.md has rows past the configuration's keys: %s", at(gl, len(wl)))
}

func at(l []string, k int) string {
	if k < len(l) {
		return l[k]
	}
	return "(nothing)"
}
