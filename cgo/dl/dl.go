// Package dl opens vendor libraries at run time with dlopen, so that vigil
// builds and runs on machines without them. It tries several candidate names
// in several directories, reports which file it opened, and turns a missing
// symbol into an error instead of a crash. Nothing is loaded until Open is
// called.
package dl

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

static const char *vigil_dl_path(void *h) {
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) {
		return NULL;
	}
	return lm->l_name;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// ErrNotFound is wrapped by Open's error when no candidate could be opened.
var ErrNotFound = errors.New("library not found")

// ErrSymbol is wrapped by Sym's error when a symbol is missing.
var ErrSymbol = errors.New("symbol not found")

// NotFoundError says which candidates were tried and why the last failed.
type NotFoundError struct {
	// Names are the library names asked for, in order of preference.
	Names []string
	// Dirs are the directories searched before the loader's own search.
	Dirs []string
	// Tried are the names and paths handed to dlopen or looked for, in order.
	Tried []string
	// Last is dlerror's text for the first dlopen that failed for another
	// reason than a missing file, else for the last one.
	Last string
}

func (e *NotFoundError) Error() string {
	name := "library"
	if len(e.Names) > 0 {
		name = e.Names[0]
	}
	where := "the loader's search path"
	if len(e.Dirs) > 0 {
		where = strings.Join(e.Dirs, ", ") + " and " + where
	}
	msg := fmt.Sprintf("%s not found (searched: %s in %s)", name, strings.Join(e.Names, ", "), where)
	// "No such file" is what not found means; anything else (a wrong ELF
	// class, a missing dependency) is worth showing.
	if e.Last != "" && !strings.Contains(e.Last, "No such file or directory") {
		msg += "; " + e.Last
	}
	return msg
}

// Unwrap lets errors.Is(err, ErrNotFound) match.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// Library is an opened shared library.
type Library struct {
	mu     sync.Mutex
	handle unsafe.Pointer
	// Path is the file that was opened (resolved by the dynamic loader).
	Path string
	// Name is the candidate name or path that succeeded.
	Name string
}

// Options says where to look for a library.
type Options struct {
	// Names are candidate file names or absolute paths, most preferred
	// first ("libcublasLt.so.13", "libcublasLt.so.12").
	Names []string
	// Dirs are directories tried, in order, before the loader's own search
	// (LD_LIBRARY_PATH, ld.so.cache, system directories).
	Dirs []string
}

// WithDefaults is o with names when o has none, and with dirs searched
// after o's own Dirs. o itself is not changed.
func (o Options) WithDefaults(names, dirs []string) Options {
	if len(o.Names) == 0 {
		o.Names = names
	}
	o.Dirs = append(append([]string(nil), o.Dirs...), dirs...)
	return o
}

// Candidates lists, in order, what Open hands to dlopen: each name joined
// with each directory, then each bare name (the loader's own search).
// Absolute names are tried as they are, once.
func (o Options) Candidates() []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, n := range o.Names {
		if filepath.IsAbs(n) {
			add(n)
			continue
		}
		for _, d := range o.Dirs {
			add(filepath.Join(d, n))
		}
	}
	for _, n := range o.Names {
		if !filepath.IsAbs(n) {
			add(n)
		}
	}
	return out
}

// Open opens the first candidate of o that dlopen accepts (RTLD_NOW |
// RTLD_LOCAL). Candidates in a directory that does not hold the file are
// skipped without calling dlopen. The error names every candidate tried.
func Open(o Options) (*Library, error) {
	if len(o.Names) == 0 {
		return nil, fmt.Errorf("dl: no library names given: %w", ErrNotFound)
	}
	nf := &NotFoundError{Names: o.Names, Dirs: o.Dirs}
	for _, c := range o.Candidates() {
		nf.Tried = append(nf.Tried, c)
		if strings.ContainsRune(c, '/') {
			if _, err := os.Stat(c); err != nil {
				continue
			}
		}
		h, msg := open(c)
		if h == nil {
			// Keep the first error that says more than "not there".
			if nf.Last == "" || strings.Contains(nf.Last, "No such file or directory") {
				nf.Last = msg
			}
			continue
		}
		l := &Library{handle: h, Name: c, Path: c}
		if p := C.vigil_dl_path(h); p != nil {
			if s := C.GoString(p); s != "" {
				l.Path = s
			}
		}
		return l, nil
	}
	return nil, nf
}

func open(name string) (unsafe.Pointer, string) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	h := C.dlopen(cs, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		return nil, dlerror()
	}
	return h, ""
}

func dlerror() string {
	if e := C.dlerror(); e != nil {
		return C.GoString(e)
	}
	return ""
}

// Load opens the library o names (names when o.Names is empty) and looks
// up every symbol of table (Syms), closing it again when one is missing:
// the start of every binding's Open.
func Load(o Options, names []string, table map[string]*unsafe.Pointer) (*Library, error) {
	lib, err := Open(o.WithDefaults(names, nil))
	if err != nil {
		return nil, err
	}
	if err := lib.Syms(table); err != nil {
		lib.Close()
		return nil, err
	}
	return lib, nil
}

// Sym looks a symbol up. A missing symbol is an error wrapping ErrSymbol;
// the library stays usable.
func (l *Library) Sym(name string) (unsafe.Pointer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil, fmt.Errorf("dl: %s: library closed", name)
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	C.dlerror() // clear
	p := C.dlsym(l.handle, cs)
	if p == nil {
		return nil, fmt.Errorf("%s in %s: %w (%s)", name, l.Path, ErrSymbol, dlerror())
	}
	return p, nil
}

// Syms looks up every name and stores the address in the matching pointer.
// It reports all missing symbols at once.
func (l *Library) Syms(table map[string]*unsafe.Pointer) error {
	names := Names(table)
	var missing []string
	for _, n := range names {
		p, err := l.Sym(n)
		if err != nil {
			missing = append(missing, n)
			continue
		}
		*table[n] = p
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s in %s: %w", strings.Join(missing, ", "), l.Path, ErrSymbol)
	}
	return nil
}

// Names returns the symbol names of a table for Syms, sorted. Bindings use
// it to publish the symbols they look up, so that tests check exactly those
// against real libraries.
func Names(table map[string]*unsafe.Pointer) []string {
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Close unloads the library. Symbols looked up before must not be used after.
func (l *Library) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil
	}
	rc := C.dlclose(l.handle)
	l.handle = nil
	if rc != 0 {
		return fmt.Errorf("dlclose %s: %s", l.Path, dlerror())
	}
	return nil
}
