// Package config reads vigil's one TOML file (/etc/vigil/vigil.toml by
// default). A File is parsed once; each owner decodes its own section into a
// struct that already holds its defaults, and Unused reports what nobody
// claimed. Every error names the key and the line it came from.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// DefaultPath is where vigil looks for its config file when none is given.
const DefaultPath = "/etc/vigil/vigil.toml"

// ErrUnknownKey is wrapped by errors about keys no section owner knows.
var ErrUnknownKey = errors.New("unknown key")

// ErrInvalid is wrapped by errors about values out of range or of the wrong kind.
var ErrInvalid = errors.New("invalid value")

// File is a parsed config file.
type File struct {
	// Name is the file name used in errors ("/etc/vigil/vigil.toml").
	Name string

	mu      sync.Mutex
	data    []byte // the document as read
	md      toml.MetaData
	top     map[string]toml.Primitive
	lines   map[string]int // dotted key -> line of its definition
	claimed map[string]bool
	// perm is the file's mode and owner as Load found them; known is
	// false for a document parsed from a reader.
	perm fileAccess
}

// fileAccess is who may read a loaded file.
type fileAccess struct {
	known bool
	mode  os.FileMode
	uid   int
}

// Empty returns a File with no keys, named name: what a node without a
// config file runs with (every Decode leaves the defaults alone).
func Empty(name string) *File {
	f, _ := parse(strings.NewReader(""), name)
	return f
}

// Parse reads a TOML document from r. Syntax errors name name:line.
func Parse(r io.Reader, name string) (*File, error) {
	countParse()
	return parse(r, name)
}

func parse(r io.Reader, name string) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f := &File{Name: name, top: map[string]toml.Primitive{}, claimed: map[string]bool{}}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f.top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s", name, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f.md = md
	f.data = data
	f.lines = keyLines(data)
	return f, nil
}

// Load parses the file at path. A missing file is an error wrapping
// fs.ErrNotExist, so callers can tell "no file" from "bad file".
func Load(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer fh.Close()
	f, err := Parse(fh, path)
	if err != nil {
		return nil, err
	}
	f.perm = access(fh)
	return f, nil
}

// OthersMayRead reports whether users other than the file's owner may
// read the file Load read (a group or other read bit), with its mode;
// false for a document parsed from a reader.
func (f *File) OthersMayRead() (bool, os.FileMode) {
	return f.perm.known && f.perm.mode.Perm()&0o044 != 0, f.perm.mode.Perm()
}

// Source returns the document f was parsed from, as read: Parse of it
// under f.Name gives an equal File, with the same lines in its errors.
// The caller must not modify it.
func (f *File) Source() []byte { return f.data }

// Line returns the line that defines the dotted key (or its nearest
// enclosing table), 0 when the file does not mention it. Parts of key may
// be quoted (`checks.gemm.thresholds."H100 PCIe".tflops_bf16`, as the TOML
// decoder names keys).
func (f *File) Line(key string) int {
	for k := normKey(key); k != ""; {
		if l, ok := f.lines[k]; ok {
			return l
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}

// Has reports whether the file sets the dotted key.
func (f *File) Has(key string) bool {
	return f.md.IsDefined(strings.Split(key, ".")...)
}

// Errorf returns an error about the dotted key that names the file, the
// line and the key, wrapping ErrInvalid. Section owners use it in Validate.
func (f *File) Errorf(key, format string, args ...any) error {
	return &KeyError{File: f.Name, Line: f.Line(key), Key: key, Err: fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))}
}

// KeyError is an error about one key of the file.
type KeyError struct {
	File string // file name
	Line int    // line of the key, 0 when unknown (e.g. a default)
	Key  string // dotted key ("prolog.budget")
	Err  error
}

func (e *KeyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %v", e.File, e.Line, e.Key, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.File, e.Key, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// Decode decodes the dotted section ("prolog", "checks.gemm") into v, a
// pointer to a struct that holds the defaults beforehand: keys absent from
// the file keep their default. A missing section is not an error. Keys of the
// section that v has no field for, and values of the wrong type, are errors
// naming the key and line.
func (f *File) Decode(section string, v any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claimed[section] = true
	countDecode(section)
	prim, ok, err := f.primitiveAt(section)
	if err != nil || !ok {
		return err
	}
	if err := f.md.PrimitiveDecode(prim, v); err != nil {
		return f.decodeErr(section, err)
	}
	var errs []error
	prefix := section + "."
	for _, k := range f.md.Undecoded() {
		ks := k.String()
		if strings.HasPrefix(ks, prefix) && !f.isTable(k) {
			errs = append(errs, &KeyError{File: f.Name, Line: f.Line(ks), Key: ks, Err: ErrUnknownKey})
		}
	}
	return errors.Join(errs...)
}

// primitiveAt is the undecoded value of section (a dotted table name);
// ok is false when the document has none. f.mu is held.
func (f *File) primitiveAt(section string) (prim toml.Primitive, ok bool, err error) {
	path := strings.Split(section, ".")
	level := f.top
	for i, p := range path {
		if prim, ok = level[p]; !ok || i == len(path)-1 {
			return prim, ok, nil
		}
		next := map[string]toml.Primitive{}
		if err := f.md.PrimitiveDecode(prim, &next); err != nil {
			return prim, false, f.decodeErr(strings.Join(path[:i+1], "."), err)
		}
		level = next
	}
	return prim, false, nil
}

func (f *File) isTable(k toml.Key) bool {
	t := f.md.Type(k...)
	return t == "Hash" || t == "ArrayHash"
}

func (f *File) decodeErr(section string, err error) error {
	var pe toml.ParseError
	key := section
	msg := err.Error()
	if errors.As(err, &pe) {
		if pe.LastKey != "" {
			key = pe.LastKey
		}
		msg = pe.Message
	} else if i := strings.Index(msg, "(last key \""); i >= 0 {
		rest := msg[i+len("(last key \""):]
		if j := strings.Index(rest, "\")"); j >= 0 {
			key = rest[:j]
			msg = strings.TrimSpace(rest[j+2:])
			msg = strings.TrimPrefix(msg, ":")
			msg = strings.TrimSpace(msg)
		}
	}
	return &KeyError{File: f.Name, Line: f.Line(key), Key: key, Err: fmt.Errorf("%w: %s", ErrInvalid, msg)}
}

// Claim marks a section as owned by a program that does not decode it
// itself (vigil-prolog claims [watch] and [policy]), so Unused stays quiet
// about it.
func (f *File) Claim(section string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claimed[section] = true
}

// Unused returns one error per key that no Decode claimed, each naming the
// key and line, in file order. Call it after every section owner decoded.
func (f *File) Unused() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, k := range f.md.Keys() {
		ks := k.String()
		if f.coveredLocked(ks) {
			continue
		}
		if f.isTable(k) && f.hasChildren(k) {
			continue // its keys are reported one by one
		}
		errs = append(errs, &KeyError{File: f.Name, Line: f.Line(ks), Key: ks, Err: ErrUnknownKey})
	}
	return errs
}

func (f *File) hasChildren(k toml.Key) bool {
	prefix := k.String() + "."
	for _, o := range f.md.Keys() {
		if strings.HasPrefix(o.String(), prefix) {
			return true
		}
	}
	return false
}

// coveredLocked reports whether ks is inside, or an ancestor table of, a
// claimed section.
func (f *File) coveredLocked(ks string) bool {
	for s := range f.claimed {
		if ks == s || strings.HasPrefix(ks, s+".") || strings.HasPrefix(s, ks+".") {
			return true
		}
	}
	return false
}

// Sections returns the dotted names of the tables below prefix ("checks"
// gives "checks.gemm", "checks.disk" ...), sorted.
func (f *File) Sections(prefix string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range f.md.Keys() {
		if len(k) == 2 && k[0] == prefix && f.isTable(k) && !seen[k.String()] {
			seen[k.String()] = true
			out = append(out, k.String())
		}
	}
	sort.Strings(out)
	return out
}

// reads counts what this process read of config documents.
var reads struct {
	sync.Mutex
	parses  int
	decodes map[string]int
}

func countParse() {
	reads.Lock()
	reads.parses++
	reads.Unlock()
}

func countDecode(section string) {
	reads.Lock()
	if reads.decodes == nil {
		reads.decodes = map[string]int{}
	}
	reads.decodes[section]++
	reads.Unlock()
}

// ReadCounts returns how many config documents this process has parsed
// (Parse, and String's reading apart) and how many times it decoded each
// section, so far: tests take it before and after a run to check that the
// run reads its config once and decodes each section once.
func ReadCounts() (parses int, decodes map[string]int) {
	reads.Lock()
	defer reads.Unlock()
	decodes = make(map[string]int, len(reads.decodes))
	for k, v := range reads.decodes {
		decodes[k] = v
	}
	return reads.parses, decodes
}

// keyLines maps each dotted key of a TOML document to the line it is
// defined on. It understands table headers, dotted and quoted keys and
// skips multi-line strings and arrays; it is only used to put line numbers
// into error messages.
//
// Why not the decoder's positions: BurntSushi/toml keeps each key's
// position unexported (MetaData.keyInfo), and go-toml/v2's DecodeError
// has a position only for a document that fails to decode; vigil's errors
// are mostly about values that decode well and are wrong (a window of
// 0s, an unknown check), whose key's line only a key-to-line map gives
// (go-toml/v2's parser exposes it only in its unstable package, which
// promises no compatibility).
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	table := ""
	inML := "" // open multi-line string delimiter
	depth := 0 // open array brackets from earlier lines
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimSpace(raw)
		if inML != "" {
			if strings.Count(line, inML)%2 == 1 {
				inML = ""
			}
			continue
		}
		if depth > 0 {
			depth += strings.Count(line, "[") - strings.Count(line, "]")
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			h := strings.TrimLeft(line, "[")
			if j := strings.Index(h, "]"); j >= 0 {
				h = h[:j]
			}
			table = normKey(h)
			if _, ok := lines[table]; !ok {
				lines[table] = n
			}
			continue
		}
		eq := strings.Index(line, "=")
		if eq < 0 {
			continue
		}
		key := normKey(line[:eq])
		if table != "" {
			key = table + "." + key
		}
		if _, ok := lines[key]; !ok {
			lines[key] = n
		}
		val := strings.TrimSpace(line[eq+1:])
		for _, d := range []string{`"""`, `'''`} {
			if strings.HasPrefix(val, d) && strings.Count(val, d)%2 == 1 {
				inML = d
			}
		}
		if strings.HasPrefix(val, "[") {
			depth = strings.Count(val, "[") - strings.Count(val, "]")
			if depth < 0 {
				depth = 0
			}
		}
	}
	return lines
}

// normKey turns `a . "b" .c` into a.b.c.
func normKey(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		p = strings.Trim(p, `"'`)
		parts[i] = p
	}
	return strings.Join(parts, ".")
}

// Subset returns the TOML text of the given sections of f (dotted table
// names: "checks.gemm", "vendor"), the ones f holds, and nothing else: what
// a checker child needs of a document its parent already parsed and
// validated, without the rest of the file.
func (f *File) Subset(sections ...string) (string, error) {
	out := map[string]any{}
	for _, s := range sections {
		path := strings.Split(s, ".")
		var v map[string]any
		f.mu.Lock()
		prim, ok, err := f.primitiveAt(s)
		if err == nil && ok {
			if err = f.md.PrimitiveDecode(prim, &v); err != nil {
				err = f.decodeErr(s, err)
			}
		}
		f.mu.Unlock()
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		m := out
		for _, p := range path[:len(path)-1] {
			sub, _ := m[p].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[path[len(path)-1]] = v
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(out); err != nil {
		return "", fmt.Errorf("%s: %w", f.Name, err)
	}
	return b.String(), nil
}
