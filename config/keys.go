package config

import (
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"
)

// Keys returns the TOML keys of the struct v (or pointer to one) in field
// order, embedded structs' keys included: what a section decoded into v
// accepts. Unknown-key errors list them.
func Keys(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			keys = append(keys, Keys(reflect.New(f.Type).Interface())...)
		case name != "":
			keys = append(keys, name)
		case f.IsExported():
			keys = append(keys, f.Name)
		}
	}
	return keys
}

// String returns the string value of the dotted key as the file sets it,
// read apart from every Decode (so that a section that failed to decode
// part way still gives its other keys), and whether the file sets it to a
// string.
func (f *File) String(key string) (string, bool) {
	var doc map[string]any
	countParse()
	if _, err := toml.Decode(string(f.data), &doc); err != nil {
		return "", false
	}
	var v any = doc
	for _, part := range strings.Split(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[part]; !ok {
			return "", false
		}
	}
	s, ok := v.(string)
	return s, ok
}
