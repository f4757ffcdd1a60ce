// Command debroot builds the Debian root that the e2e tests run a second
// Slurm from (slurm/slurmtest, .ci/slurm-root): the named packages of one
// Debian suite with everything they depend on, unpacked into a directory.
//
// It does what debootstrap and apt would, less what the tests never use:
// the suite's InRelease is checked with gpgv against Debian's archive
// keyring, the package index and every .deb against the hashes it signs;
// the dependency closure (Depends and Pre-Depends, and the suite's
// Essential packages) is resolved here; the packages are fetched and
// unpacked side by side. No maintainer script runs: the tests bring their
// own users (the host's passwd), munge key and Slurm directories. What the
// harness and dpkg-query read of dpkg's database is written: each
// package's file list and its status entry. The shared-library cache is
// made with the root's own ldconfig, and the BLAS and LAPACK links that
// update-alternatives would make are made.
//
// The root is built beside DIR and renamed into place when whole. A root
// whose key file holds the same key (a hash of the suite, the package list
// and this program) is left as it is: that is the second run's few
// milliseconds.
//
// Usage:
//
//	go run ./slurm/slurmtest/debroot -root DIR [-suite trixie] [-mirror URL] [-key-extra S] PKG...
package main

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

//go:embed main.go
var selfMain []byte

//go:embed resolve.go
var selfResolve []byte

//go:embed fetch.go
var selfFetch []byte

// keyFile is where a finished root records what it was built from.
const keyFile = ".vigil-root-key"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "debroot:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("debroot", flag.ContinueOnError)
	root := fs.String("root", "", "the root's `directory` (required)")
	suite := fs.String("suite", "trixie", "the Debian `suite`")
	mirror := fs.String("mirror", "http://deb.debian.org/debian", "the Debian mirror's `URL`")
	keyring := fs.String("keyring", "/usr/share/keyrings/debian-archive-keyring.gpg", "the `keyring` gpgv checks InRelease with")
	extra := fs.String("key-extra", "", "more `text` for the root's key (e.g. a hash of the script that calls this)")
	jobs := fs.Int("jobs", 8, "parallel downloads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pkgs := fs.Args()
	if *root == "" || len(pkgs) == 0 {
		return fmt.Errorf("usage: debroot -root DIR [-suite S] [-mirror URL] PKG (one or more)")
	}
	key := rootKey(*suite, *mirror, *extra, pkgs)
	if old, err := os.ReadFile(filepath.Join(*root, keyFile)); err == nil && strings.TrimSpace(string(old)) == key {
		fmt.Printf("debroot: %s is up to date (key %s)\n", *root, key[:12])
		return nil
	}
	start := time.Now()
	b := &builder{mirror: strings.TrimRight(*mirror, "/"), suite: *suite, keyring: *keyring, jobs: *jobs}
	idx, err := b.index()
	if err != nil {
		return err
	}
	sel, err := idx.closure(pkgs)
	if err != nil {
		return err
	}
	tmp := *root + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := b.build(tmp, sel); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, keyFile), []byte(key+"\n"), 0o644); err != nil {
		return err
	}
	if err := replace(*root, tmp); err != nil {
		return err
	}
	fmt.Printf("debroot: %s: %d packages of %s in %.0fs\n", *root, len(sel), *suite, time.Since(start).Seconds())
	return nil
}

// rootKey is the hash that says which root a directory holds: the suite,
// the mirror, the packages asked for and this program's own source.
func rootKey(suite, mirror, extra string, pkgs []string) string {
	p := append([]string(nil), pkgs...)
	sort.Strings(p)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n", suite, mirror, extra, strings.Join(p, " "))
	h.Write(selfMain)
	h.Write(selfResolve)
	h.Write(selfFetch)
	return hex.EncodeToString(h.Sum(nil))
}

// replace puts the finished root tmp at root, removing what was there.
func replace(root, tmp string) error {
	old := root + ".old"
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if _, err := os.Lstat(root); err == nil {
		if err := os.Rename(root, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, root); err != nil {
		return err
	}
	return os.RemoveAll(old)
}
