package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Overrides is the table of a section's keys that the environment and the
// command line may set, read from the struct tags of the section's type:
//
//	Budget time.Duration `toml:"budget" env:"VIGIL_BUDGET" flag:"budget" arg:"30m"`
//
// env names the environment variable, flag the flag (without dashes), arg
// the value shown in --help (default: the field's kind, as the flag
// package names it), usage what --help says of it (default: "[SECTION]
// KEY"), and follows a key this one derives from when not set ([watch]
// period from window): its errors then name that key's flag or variable.
// A field with neither env nor flag is read from the file only.
//
// vigil-prolog and vigil-watch apply their overrides through one
// Overrides each: the values as given (Env, Flags), parsed by the field's
// kind (Apply), errors about them in one wording (OverrideError), and the
// OVERRIDES lines of --help (Help, PrintFlags).
//
// Why not a flags-and-environment library (peterbourgon/ff, spf13/viper,
// kelseyhightower/envconfig): they give the precedence, but their errors
// name a value, not where it came from, and none can say "the job's
// VIGIL_HANG_DETECT_TIME, clamped by [policy] at vigil.toml:12" or name the
// flag of the key a derived value follows; the flags themselves are the
// standard library's, so the table adds only what those errors need.
type Overrides struct {
	// Section is the section's name ("prolog").
	Section string
	// Keys are the overridable keys in field order.
	Keys []Override
}

// Override is one overridable key.
type Override struct {
	// Key is the key in its section ("check_timeout").
	Key string
	// Env is the environment variable that sets it ("VIGIL_CHECK_TIMEOUT"), "" for none.
	Env string
	// Flag is the flag that sets it ("check-timeout"), "" for none.
	Flag string
	// Arg is the value --help shows ("6m", "duration").
	Arg string
	// Usage is what --help says of the key.
	Usage string
	// Follows is the key this one derives from when not set ("window"), or "".
	Follows string
	// Default is the shipped value as a flag prints it ("6m0s").
	Default string

	index []int
	typ   reflect.Type
	parse func(string) (any, error)
}

// Source is where an override came from.
type Source string

// The sources of overrides, as errors name them.
const (
	FromEnv  Source = "environment"
	FromFlag Source = "flag"
)

// Values are override values as given, by key ("budget": "30m").
type Values map[string]string

// ErrOverride is wrapped by errors about an override value that does not
// parse.
var ErrOverride = errors.New("bad override")

// OverrideError is an error about a value that a flag or the environment
// gave: `flag --budget="10ms": invalid value: ...`,
// `environment VIGIL_BUDGET="soon": bad override: ...`.
type OverrideError struct {
	// From is where the value came from.
	From Source
	// Name is the flag or the variable ("--budget", "VIGIL_BUDGET").
	Name string
	// Value is the value as given.
	Value string
	// Err says what is wrong with it.
	Err error
}

func (e *OverrideError) Error() string {
	name := string(e.From) + " " + e.Name
	return fmt.Sprintf("%s=%q: %v", name, e.Value, e.Err)
}

func (e *OverrideError) Unwrap() error { return e.Err }

// BadOverride returns the error about a value of name (a flag "--budget"
// or a variable "VIGIL_BUDGET") from from that does not parse; it wraps
// ErrOverride and err.
func BadOverride(from Source, name, value string, err error) error {
	return &OverrideError{From: from, Name: name, Value: value, Err: fmt.Errorf("%w: %w", ErrOverride, err)}
}

// NewOverrides reads the override table of section from the struct tags of
// defaults, a section's struct (or pointer to one) holding its shipped
// values; embedded structs' keys are included.
func NewOverrides(section string, defaults any) *Overrides {
	o := &Overrides{Section: section}
	rv := reflect.ValueOf(defaults)
	for rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(append([]int(nil), index...), i)
			key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if f.Anonymous && key == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			env, fl := f.Tag.Get("env"), f.Tag.Get("flag")
			if key == "" || key == "-" || (env == "" && fl == "") {
				continue
			}
			k := Override{Key: key, Env: env, Flag: fl, Arg: f.Tag.Get("arg"), Usage: f.Tag.Get("usage"),
				Follows: f.Tag.Get("follows"), index: idx, typ: f.Type}
			if k.Arg == "" {
				k.Arg = kindName(f.Type)
			}
			if k.Usage == "" {
				k.Usage = "[" + section + "] " + key
			}
			k.Default = formatValue(rv.FieldByIndex(idx))
			o.Keys = append(o.Keys, k)
		}
	}
	walk(rv.Type(), nil)
	return o
}

// WithParser makes key read its values with parse (the hang window's
// "minutes or a duration"), whose result must be of the field's type.
// It returns o.
func (o *Overrides) WithParser(key string, parse func(string) (any, error)) *Overrides {
	for i := range o.Keys {
		if o.Keys[i].Key == key {
			o.Keys[i].parse = parse
		}
	}
	return o
}

// Lookup returns the override of key.
func (o *Overrides) Lookup(key string) (Override, bool) {
	for _, k := range o.Keys {
		if k.Key == key {
			return k, true
		}
	}
	return Override{}, false
}

// Name is how errors name the key's value from from: "--budget" or
// "VIGIL_BUDGET".
func (k Override) Name(from Source) string {
	if from == FromFlag {
		return "--" + k.Flag
	}
	return k.Env
}

// Env returns the values the environment sets (lookup reads it); a
// variable set to blanks sets nothing.
func (o *Overrides) Env(lookup func(string) (string, bool)) Values {
	out := Values{}
	for _, k := range o.Keys {
		if k.Env == "" || lookup == nil {
			continue
		}
		if v, ok := lookup(k.Env); ok && strings.TrimSpace(v) != "" {
			out[k.Key] = v
		}
	}
	return out
}

// Flags registers one flag per key that has one on fs (keep, when not
// nil, chooses which) and returns a function that gives the values of
// the flags given. A flag keeps its value as given: Apply parses it, so
// that a bad one reads as a bad environment value does.
func (o *Overrides) Flags(fs *flag.FlagSet, keep func(Override) bool) func() Values {
	vals := map[string]*flagValue{}
	for _, k := range o.Keys {
		if k.Flag == "" || (keep != nil && !keep(k)) {
			continue
		}
		v := &flagValue{k: k}
		vals[k.Key] = v
		fs.Var(v, k.Flag, k.Usage)
	}
	return func() Values {
		out := Values{}
		for key, v := range vals {
			if v.set {
				out[key] = v.val
			}
		}
		return out
	}
}

// flagValue is an override flag: the value as given, parsed by Apply.
type flagValue struct {
	k   Override
	val string
	set bool
}

func (v *flagValue) String() string {
	switch {
	case v == nil:
		return ""
	case v.set:
		return v.val
	}
	return v.k.Default
}

func (v *flagValue) Set(s string) error {
	v.val, v.set = s, true
	return nil
}

// IsBoolFlag lets a flag of a bool key stand without a value ("--mail").
func (v *flagValue) IsBoolFlag() bool {
	return v != nil && v.k.typ != nil && v.k.typ.Kind() == reflect.Bool
}

// Apply sets the keys in vals on dst, a pointer to the section's struct,
// in table order. Each value that does not parse is an *OverrideError
// naming the flag or variable of from; the others are set all the same.
func (o *Overrides) Apply(dst any, vals Values, from Source) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("[%s] overrides: want a pointer to the section's struct, got %T", o.Section, dst)
	}
	var errs []error
	for _, k := range o.Keys {
		s, ok := vals[k.Key]
		if !ok {
			continue
		}
		v, err := k.value(s)
		if err != nil {
			errs = append(errs, BadOverride(from, k.Name(from), s, err))
			continue
		}
		rv.Elem().FieldByIndex(k.index).Set(v)
	}
	return errors.Join(errs...)
}

// value parses s as a value of k's field.
func (k Override) value(s string) (reflect.Value, error) {
	if k.parse != nil {
		v, err := k.parse(s)
		if err != nil {
			return reflect.Value{}, err
		}
		rv := reflect.ValueOf(v)
		if !rv.IsValid() || !rv.Type().AssignableTo(k.typ) {
			return reflect.Value{}, fmt.Errorf("parser of %s gave %T, want %v", k.Key, v, k.typ)
		}
		return rv, nil
	}
	v := reflect.New(k.typ).Elem()
	if k.typ == durationType {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		v.SetInt(int64(d))
		return v, err
	}
	var err error
	switch k.typ.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		var b bool
		b, err = strconv.ParseBool(strings.TrimSpace(s))
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		var n int64
		n, err = strconv.ParseInt(strings.TrimSpace(s), 10, k.typ.Bits())
		v.SetInt(n)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		var n uint64
		n, err = strconv.ParseUint(strings.TrimSpace(s), 10, k.typ.Bits())
		v.SetUint(n)
	case reflect.Float64, reflect.Float32:
		var x float64
		x, err = strconv.ParseFloat(strings.TrimSpace(s), k.typ.Bits())
		v.SetFloat(x)
	case reflect.Slice:
		if k.typ.Elem().Kind() != reflect.String {
			return v, fmt.Errorf("no parser for %v", k.typ)
		}
		list := reflect.MakeSlice(k.typ, 0, 0)
		for _, e := range strings.Split(s, ",") {
			if e = strings.TrimSpace(e); e != "" {
				list = reflect.Append(list, reflect.ValueOf(e).Convert(k.typ.Elem()))
			}
		}
		v.Set(list)
	default:
		return v, fmt.Errorf("no parser for %v", k.typ)
	}
	return v, unwrapNum(err)
}

// unwrapNum drops strconv's "strconv.ParseInt: parsing "x": " prefix.
func unwrapNum(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return fmt.Errorf("%q: %w", ne.Num, ne.Err)
	}
	return err
}

// Explain splits err, the errors of validating the section of f after the
// overrides, and words each about a key that env or flags set as an
// *OverrideError naming the flag (flags win) or the variable, not the
// file: the value did not come from there. A key that follows another and
// that nothing set itself (neither flag, variable nor f) is named by that
// one's flag or variable. Other errors are kept as they are.
func (o *Overrides) Explain(f *File, err error, env, flags Values) []error {
	var out []error
	for _, e := range SplitErrors(err) {
		var ke *KeyError
		if errors.As(e, &ke) {
			if k, ok := o.Lookup(strings.TrimPrefix(ke.Key, o.Section+".")); ok {
				by := k.Key
				_, byFlag := flags[by]
				_, byEnv := env[by]
				if !byFlag && !byEnv && k.Follows != "" && (f == nil || !f.Has(ke.Key)) {
					by = k.Follows
				}
				if oe := o.setBy(by, ke.Err, env, flags); oe != nil {
					e = oe
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// setBy returns err about the value of key in the words of the flag or
// variable that set it, or nil when neither did.
func (o *Overrides) setBy(key string, err error, env, flags Values) error {
	k, _ := o.Lookup(key)
	if v, ok := flags[key]; ok {
		return &OverrideError{From: FromFlag, Name: k.Name(FromFlag), Value: v, Err: err}
	}
	if v, ok := env[key]; ok {
		return &OverrideError{From: FromEnv, Name: k.Name(FromEnv), Value: v, Err: err}
	}
	return nil
}

// SplitErrors undoes errors.Join, recursively; nil gives none.
func SplitErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, SplitErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// Help returns the OVERRIDES lines of a manual: one per key with a flag,
// "    --budget 30m   [prolog] budget   env VIGIL_BUDGET", a long usage
// wrapped below; a key only the environment sets is "    VIGIL_REPAIR=true|false   usage".
func (o *Overrides) Help() string { return Help(o) }

// Help is the OVERRIDES lines of several tables, in one set of columns.
func Help(tables ...*Overrides) string {
	var keys []Override
	for _, o := range tables {
		keys = append(keys, o.Keys...)
	}
	const indent, wrap = "    ", 54
	w1, w2 := 0, 0
	for _, k := range keys {
		if k.Flag == "" {
			continue
		}
		w1 = max(w1, len("--"+k.Flag+" "+k.Arg))
		if len(k.Usage) <= wrap/2 {
			w2 = max(w2, len(k.Usage))
		}
	}
	var b strings.Builder
	for _, k := range keys {
		if k.Flag == "" {
			if k.Env != "" { // a key only the environment sets
				b.WriteString(strings.TrimRight(fmt.Sprintf("%s%-*s %s", indent, w1, k.Env+"="+k.Arg, k.Usage), " ") + "\n")
			}
			continue
		}
		env := ""
		if k.Env != "" {
			env = "env " + k.Env
		}
		head := fmt.Sprintf("%s%-*s ", indent, w1, "--"+k.Flag+" "+k.Arg)
		if len(k.Usage) <= w2 {
			b.WriteString(strings.TrimRight(fmt.Sprintf("%s%-*s %s", head, w2, k.Usage, env), " ") + "\n")
			continue
		}
		text := k.Usage
		if env != "" {
			text += "; " + env
		}
		for i, line := range wrapWords(text, wrap) {
			if i > 0 {
				head = strings.Repeat(" ", len(head))
			}
			b.WriteString(head + line + "\n")
		}
	}
	return b.String()
}

// wrapWords breaks s into lines of at most width characters (longer words
// stand alone).
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}

// PrintFlags writes the flags of fs as flag.PrintDefaults does, but with
// the value names and defaults of the override flags that Flags
// registered ("-grace duration ... (default 10m0s)").
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		var b strings.Builder
		fmt.Fprintf(&b, "  -%s", f.Name)
		name, usage := flag.UnquoteUsage(f)
		def, quoted := f.DefValue, false
		if v, ok := f.Value.(*flagValue); ok {
			name, usage, def = v.k.Arg, v.k.Usage, v.k.Default
			quoted = v.k.typ.Kind() == reflect.String
			if v.IsBoolFlag() {
				name = ""
			}
		} else if t := reflect.TypeOf(f.Value); t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.String {
			quoted = true
		}
		if name != "" {
			b.WriteString(" " + name)
		}
		if b.Len() <= 4 {
			b.WriteString("\t")
		} else {
			b.WriteString("\n    \t")
		}
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		switch {
		case def == "" || def == "0" || def == "false" || def == "0s" || def == "[]":
		case quoted:
			fmt.Fprintf(&b, " (default %q)", def)
		default:
			fmt.Fprintf(&b, " (default %v)", def)
		}
		fmt.Fprintln(w, b.String())
	})
}

var durationType = reflect.TypeOf(time.Duration(0))

// kindName is the value name the flag package gives a flag of type t.
func kindName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Bool:
		return ""
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "int"
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		return "uint"
	case reflect.Float64, reflect.Float32:
		return "float"
	case reflect.Slice:
		return "a,b"
	}
	return "string"
}

// formatValue is v as a flag of its kind prints it.
func formatValue(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	if v.Kind() == reflect.Slice {
		var parts []string
		for i := range v.Len() {
			parts = append(parts, fmt.Sprint(v.Index(i).Interface()))
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v.Interface())
}
