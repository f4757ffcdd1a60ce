package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// builder fetches from one suite of one mirror.
type builder struct {
	mirror, suite, keyring string
	jobs                   int
}

// indexPath is the package index read, as InRelease names it.
const indexPath = "main/binary-amd64/Packages.gz"

// index fetches InRelease, checks its signature with gpgv, and fetches and
// checks the package index it signs.
func (b *builder) index() (*index, error) {
	signed, err := b.get("dists/" + b.suite + "/InRelease")
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "debroot-inrelease-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(signed); err != nil {
		return nil, err
	}
	tmp.Close()
	var out, errb bytes.Buffer
	cmd := exec.Command("gpgv", "--keyring", b.keyring, "--output", "-", tmp.Name())
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("gpgv %s's InRelease with %s: %v: %s (apt-get install gpgv debian-archive-keyring)",
			b.suite, b.keyring, err, strings.TrimSpace(errb.String()))
	}
	want, err := releaseHash(out.Bytes(), indexPath)
	if err != nil {
		return nil, err
	}
	gz, err := b.get("dists/" + b.suite + "/" + indexPath)
	if err != nil {
		return nil, err
	}
	if got := sum(gz); got != want {
		return nil, fmt.Errorf("%s: sha256 %s, InRelease says %s", indexPath, got, want)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	return parseIndex(zr)
}

// releaseHash finds the SHA256 of name in a Release file.
func releaseHash(release []byte, name string) (string, error) {
	inSHA := false
	sc := bufio.NewScanner(bytes.NewReader(release))
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, " ") {
			inSHA = strings.HasPrefix(l, "SHA256:")
			continue
		}
		if f := strings.Fields(l); inSHA && len(f) == 3 && f[2] == name {
			return f[0], nil
		}
	}
	return "", fmt.Errorf("InRelease has no SHA256 of %s", name)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// get fetches one file of the mirror.
func (b *builder) get(path string) ([]byte, error) {
	resp, err := http.Get(b.mirror + "/" + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/%s: %s", b.mirror, path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// build fetches and unpacks pkgs into dir, then writes dpkg's records, the
// library cache and the alternatives links.
func (b *builder) build(dir string, pkgs []*pkg) error {
	// A merged /usr, as Debian 12 and later lay it out.
	if err := os.MkdirAll(filepath.Join(dir, "usr/lib64"), 0o755); err != nil {
		return err
	}
	for _, d := range []string{"bin", "sbin", "lib", "lib64"} {
		if err := os.MkdirAll(filepath.Join(dir, "usr", d), 0o755); err != nil {
			return err
		}
		if err := os.Symlink("usr/"+d, filepath.Join(dir, d)); err != nil {
			return err
		}
	}
	debs := filepath.Join(dir, "var/cache/debroot")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return err
	}
	lists := make([][]string, len(pkgs))
	alts := make([][]alternative, len(pkgs))
	err := parallel(len(pkgs), b.jobs, func(i int) error {
		p := pkgs[i]
		data, err := b.get(p.Filename)
		if err != nil {
			return err
		}
		if got := sum(data); got != p.SHA256 {
			return fmt.Errorf("%s: sha256 %s, the index says %s", p.Filename, got, p.SHA256)
		}
		deb := filepath.Join(debs, filepath.Base(p.Filename))
		if err := os.WriteFile(deb, data, 0o644); err != nil {
			return err
		}
		if lists[i], err = unpack(deb, dir); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		alts[i] = postinstAlternatives(deb)
		return os.Remove(deb)
	})
	if err != nil {
		return err
	}
	if err := writeDpkg(dir, pkgs, lists); err != nil {
		return err
	}
	if err := linkAlternatives(dir, alts); err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(dir, "usr/bin/sh")); err != nil {
		if err := os.Symlink("dash", filepath.Join(dir, "usr/bin/sh")); err != nil {
			return err
		}
	}
	if out, err := exec.Command("chroot", dir, "/sbin/ldconfig").CombinedOutput(); err != nil {
		return fmt.Errorf("ldconfig in %s: %v: %s", dir, err, out)
	}
	return nil
}

// parallel runs f(0..n-1) on at most jobs goroutines and returns the
// first error.
func parallel(n, jobs int, f func(int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// unpack extracts a .deb's files into dir (keeping the merged-/usr links)
// and returns its file list as dpkg writes it.
func unpack(deb, dir string) ([]string, error) {
	cmd := exec.Command("/bin/sh", "-c", `dpkg-deb --fsys-tarfile "$1" | tar -x -v --keep-directory-symlink -C "$2"`, "sh", deb, dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("unpack: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	var files []string
	for _, l := range strings.Split(out.String(), "\n") {
		l = strings.TrimSuffix(strings.TrimPrefix(l, "."), "/")
		if l == "" {
			l = "/."
			if len(files) > 0 {
				continue
			}
		}
		files = append(files, l)
	}
	return files, nil
}

// writeDpkg writes each package's file list and a status entry, so that
// dpkg-query and the harness (rootPrograms) see the packages installed.
func writeDpkg(dir string, pkgs []*pkg, lists [][]string) error {
	info := filepath.Join(dir, "var/lib/dpkg/info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return err
	}
	var status bytes.Buffer
	for i, p := range pkgs {
		fmt.Fprintf(&status, "Package: %s\nStatus: install ok installed\nMaintainer: %s\nVersion: %s\nArchitecture: %s\nDescription: %s\n",
			p.Name, p.Maintainer, p.Version, p.Arch, p.Description)
		if p.Essential {
			status.WriteString("Essential: yes\n")
		}
		status.WriteString("\n")
		if err := os.WriteFile(filepath.Join(info, p.Name+".list"), []byte(strings.Join(lists[i], "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "var/lib/dpkg/status"), status.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "var/lib/dpkg/available"), nil, 0o644)
}

// alternative is one update-alternatives --install of a package's postinst.
type alternative struct {
	link, path string
	prio       int
}

// postinstAlternatives reads the links a package's postinst would install
// with update-alternatives (literal paths only): each --install's master
// link and its --slave links, at the master's priority.
func postinstAlternatives(deb string) []alternative {
	out, err := exec.Command("dpkg-deb", "-I", deb, "postinst").Output()
	if err != nil {
		return nil
	}
	return alternativesIn(string(out))
}

// alternativesIn parses the update-alternatives --install calls of a
// maintainer script.
func alternativesIn(script string) []alternative {
	var alts []alternative
	for _, line := range strings.Split(strings.ReplaceAll(script, "\\\n", " "), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasSuffix(f[0], "update-alternatives") {
			continue
		}
		prio := 0
		for i := 1; i < len(f); i++ {
			switch {
			case f[i] == "--install" && i+4 < len(f):
				fmt.Sscan(f[i+4], &prio)
				alts = appendAlt(alts, f[i+1], f[i+3], prio)
				i += 4
			case f[i] == "--slave" && i+3 < len(f):
				alts = appendAlt(alts, f[i+1], f[i+3], prio)
				i += 3
			}
		}
	}
	return alts
}

func appendAlt(alts []alternative, link, path string, prio int) []alternative {
	if strings.HasPrefix(link, "/") && strings.HasPrefix(path, "/") {
		alts = append(alts, alternative{link: link, path: path, prio: prio})
	}
	return alts
}

// linkAlternatives makes each link that is not there point at its
// highest-priority choice that exists in the root.
func linkAlternatives(dir string, per [][]alternative) error {
	best := map[string]alternative{}
	for _, alts := range per {
		for _, a := range alts {
			if _, err := os.Lstat(filepath.Join(dir, a.path)); err != nil {
				continue
			}
			if b, ok := best[a.link]; !ok || a.prio > b.prio {
				best[a.link] = a
			}
		}
	}
	links := make([]string, 0, len(best))
	for l := range best {
		links = append(links, l)
	}
	sort.Strings(links)
	for _, l := range links {
		host := filepath.Join(dir, l)
		if _, err := os.Lstat(host); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(best[l].path, host); err != nil {
			return err
		}
	}
	return nil
}
