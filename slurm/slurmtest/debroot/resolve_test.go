package main

import (
	"fmt"
	"strings"
	"testing"
)

const packages = `Package: slurmd
Version: 24.11.5-4
Architecture: amd64
Depends: libc6 (>= 2.38), slurm-wlm-basic-plugins (= 24.11.5-4), ucf, lsb-base | sysvinit-utils (>= 3.05-4~)
Pre-Depends: init-system-helpers (>= 1.54~)
Description: SLURM compute node daemon
 A long text.
Filename: pool/main/s/slurm-wlm/slurmd_24.11.5-4_amd64.deb
SHA256: aa

Package: slurm-wlm-basic-plugins
Version: 24.11.5-4
Architecture: amd64
Depends: libc6, libblas.so.3, python3-sympy | python3-supported-max (<< 3.9)
Filename: pool/main/s/slurm-wlm/slurm-wlm-basic-plugins_24.11.5-4_amd64.deb

Package: python3-sympy
Version: 1.13.3-4
Architecture: all
Filename: pool/main/s/sympy/python3-sympy_1.13.3-4_all.deb

Package: python3
Version: 3.13.5-1
Architecture: amd64
Provides: python3-supported-max (= 3.13)
Essential: yes
Filename: pool/main/p/python3-defaults/python3_3.13.5-1_amd64.deb

Package: libc6
Version: 2.41-12
Architecture: amd64
Filename: pool/main/g/glibc/libc6_2.41-12_amd64.deb

Package: ucf
Version: 3.0050
Architecture: all
Depends: debconf (>= 1.5.19) | cdebconf, coreutils:any
Filename: pool/main/u/ucf/ucf_3.0050_all.deb

Package: debconf
Version: 1.5.91
Architecture: all
Filename: pool/main/d/debconf/debconf_1.5.91_all.deb

Package: coreutils
Version: 9.7-3
Architecture: amd64
Essential: yes
Filename: pool/main/c/coreutils/coreutils_9.7-3_amd64.deb

Package: sysvinit-utils
Version: 3.14-4
Architecture: amd64
Filename: pool/main/s/sysvinit/sysvinit-utils_3.14-4_amd64.deb

Package: init-system-helpers
Version: 1.69
Architecture: all
Filename: pool/main/i/init-system-helpers/init-system-helpers_1.69_all.deb

Package: libopenblas0
Version: 0.3.29
Architecture: amd64
Provides: libblas.so.3, liblapack.so.3
Filename: pool/main/o/openblas/libopenblas0_0.3.29_amd64.deb

Package: libblas3
Version: 3.12.1-6
Architecture: amd64
Provides: libblas.so.3
Filename: pool/main/l/lapack/libblas3_3.12.1-6_amd64.deb
`

func TestClosure(t *testing.T) {
	idx, err := parseIndex(strings.NewReader(packages))
	if err != nil {
		t.Fatal(err)
	}
	sel, err := idx.closure([]string{"slurmd"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range sel {
		names = append(names, p.Name)
	}
	// lsb-base is in no suite: the second alternative; libblas.so.3 is
	// virtual: its first provider by name; python3-sympy comes first of its
	// alternatives though python3 (chosen, Essential here) provides the
	// other; coreutils is Essential.
	want := "coreutils debconf init-system-helpers libblas3 libc6 python3 python3-sympy slurm-wlm-basic-plugins slurmd sysvinit-utils ucf"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("closure(slurmd) = %s\nwant %s", got, want)
	}
	if d := idx.byName["slurmd"].Description; d != "SLURM compute node daemon" {
		t.Errorf("description %q", d)
	}
	if _, err := idx.closure([]string{"no-such-package"}); err == nil || !strings.Contains(err.Error(), "no-such-package") {
		t.Errorf("a package nothing gives: err %v, want one naming it", err)
	}
}

func TestParseRelations(t *testing.T) {
	got := parseRelations("a (>= 1) | b:any, c [amd64], d:amd64 (= 2)")
	want := [][]string{{"a", "b"}, {"c"}, {"d"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("group %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestReleaseHash(t *testing.T) {
	rel := "Origin: Debian\nMD5Sum:\n 0123 10 main/binary-amd64/Packages.gz\nSHA256:\n abcd 99 main/binary-amd64/Packages.xz\n beef 10 main/binary-amd64/Packages.gz\n"
	if h, err := releaseHash([]byte(rel), "main/binary-amd64/Packages.gz"); err != nil || h != "beef" {
		t.Errorf("releaseHash = %q, %v; want the SHA256 section's beef", h, err)
	}
	if _, err := releaseHash([]byte(rel), "contrib/binary-amd64/Packages.gz"); err == nil {
		t.Error("a file InRelease does not list: want an error")
	}
}

func TestAlternativesFromPostinst(t *testing.T) {
	post := "#!/bin/sh\nset -e\nupdate-alternatives --install /usr/lib/x86_64-linux-gnu/libblas.so.3 \\\n" +
		"                    libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 10\n" +
		"      update-alternatives --install /usr/sbin/slurmd slurmd /usr/sbin/slurmd-wlm 50 \\\n" +
		"\t--slave /usr/sbin/slurmstepd slurmstepd /usr/sbin/slurmstepd-wlm\n" +
		"update-alternatives --install \"$LINK\" x \"$DIR/y\" 5\n"
	got := alternativesIn(post)
	want := []alternative{
		{"/usr/lib/x86_64-linux-gnu/libblas.so.3", "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", 10},
		{"/usr/sbin/slurmd", "/usr/sbin/slurmd-wlm", 50},
		{"/usr/sbin/slurmstepd", "/usr/sbin/slurmstepd-wlm", 50},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("alternativesIn = %v\nwant %v", got, want)
	}
}
