package settings

import (
	"reflect"
	"strings"
	"time"
)

var durationType = reflect.TypeOf(time.Duration(0))

// durationsAsStrings turns a settings struct (or pointer to one) into a
// map keyed by its toml names with durations written as "6m0s", so the
// printed config reads back the same way it is written. nil stays nil.
//
// The TOML encoder (BurntSushi/toml v1.6) writes a time.Duration as
// "6m0s" itself, but encoding the structs directly would change what
// --print-example-config and --check-config print: it writes a struct's
// keys in field order (this map's keys come out sorted), leaves out nil
// slices (here "checks = []") and empty maps (here an empty table, such
// as [prolog.timeouts], in the example). The map keeps both outputs as
// they are documented and tested.
func durationsAsStrings(v any) any {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil
	}
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return v
		}
		rv = rv.Elem()
	}
	return convert(rv, false)
}

// convert turns rv into plain TOML values; empty maps are left out unless
// keepEmpty is set (then they become empty tables).
func convert(rv reflect.Value, keepEmpty bool) any {
	if rv.Type() == durationType {
		return time.Duration(rv.Int()).String()
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return convert(rv.Elem(), keepEmpty)
	case reflect.Struct:
		m := map[string]any{}
		t := rv.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Name
			if f.Anonymous && f.Tag.Get("toml") == "" {
				// Embedded structs are flattened, as the TOML decoder does.
				if inner, ok := convert(rv.Field(i), keepEmpty).(map[string]any); ok {
					for k, v := range inner {
						m[k] = v
					}
					continue
				}
			}
			if tag := f.Tag.Get("toml"); tag != "" {
				if tag == "-" {
					continue
				}
				name = strings.Split(tag, ",")[0]
				if strings.Contains(tag, ",omitempty") && rv.Field(i).IsZero() {
					continue
				}
			}
			if c := convert(rv.Field(i), keepEmpty); c != nil {
				m[name] = c
			}
		}
		return m
	case reflect.Map:
		if rv.Len() == 0 && !keepEmpty {
			return nil
		}
		m := map[string]any{}
		for _, k := range rv.MapKeys() {
			if c := convert(rv.MapIndex(k), keepEmpty); c != nil {
				m[k.String()] = c
			}
		}
		return m
	case reflect.Slice:
		if rv.Len() == 0 {
			return []any{}
		}
		s := make([]any, 0, rv.Len())
		for i := 0; i < rv.Len(); i++ {
			s = append(s, convert(rv.Index(i), keepEmpty))
		}
		return s
	default:
		return rv.Interface()
	}
}
