package slurm

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/vigil-hpc/vigil/slurm/hostlist"
	"os"
	"strings"
)

// NodeAddrs returns the NodeAddr of each of nodes, read with one
// `scontrol show node -o HOSTLIST` call (the names compressed into one
// hostlist expression), so that a job of any size costs slurmctld one
// query. A node whose NodeAddr is not printed gets its NodeHostName, else
// its name. Nodes missing from the output are missing from the map.
func (c *Client) NodeAddrs(ctx context.Context, nodes []string) (map[string]string, error) {
	if len(nodes) == 0 {
		return map[string]string{}, nil
	}
	for _, n := range nodes {
		if err := checkNodeName(n); err != nil {
			return nil, err
		}
	}
	out, err := c.scontrol(ctx, "show", "node", "-o", hostlist.Compress(nodes))
	if err != nil {
		return nil, fmt.Errorf("slurm: reading the addresses of %s: %w", hostlist.Compress(nodes), err)
	}
	return ParseNodeAddrs(out, nodes)
}

// ParseNodeAddrs picks the addresses of nodes out of `scontrol show node
// -o` output: NodeAddr, else NodeHostName, else the name.
func ParseNodeAddrs(out []byte, nodes []string) (map[string]string, error) {
	all, err := ParseNodes(out)
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		want[n] = true
	}
	addrs := make(map[string]string, len(nodes))
	for _, n := range all {
		if !want[n.Name] {
			continue
		}
		a := n.Fields["NodeAddr"]
		if a == "" || a == "(null)" {
			a = n.Fields["NodeHostName"]
		}
		if a == "" || a == "(null)" {
			a = n.Name
		}
		addrs[n.Name] = a
	}
	return addrs, nil
}

// ReadConfFile reads the Key=Value settings of a slurm.conf file (keys as
// written, the last occurrence winning, as Slurm reads them), without
// asking slurmctld. Include lines are not followed; node and partition
// lines are skipped. Values keep their case; keys are given as written.
func ReadConfFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfFile(b), nil
}

// ParseConfFile parses slurm.conf text as ReadConfFile does.
func ParseConfFile(b []byte) map[string]string {
	cfg := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		switch strings.ToLower(k) {
		case "nodename", "partitionname", "frontendname", "nodeset", "downnodes":
			continue
		}
		if strings.ContainsAny(k, " \t") {
			continue
		}
		cfg[k] = strings.TrimSpace(v)
	}
	return cfg
}

// ConfValue returns the value of key in a slurm.conf or `scontrol show
// config` map, matching the key without regard to case.
func ConfValue(cfg map[string]string, key string) (string, bool) {
	if v, ok := cfg[key]; ok {
		return v, true
	}
	for k, v := range cfg {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// MailProg returns the MailProg of a slurm.conf or `scontrol show config`
// map, and whether one is set ("(null)", scontrol's word for unset, is none).
func MailProg(cfg map[string]string) (string, bool) {
	p, _ := ConfValue(cfg, "MailProg")
	p = strings.TrimSpace(p)
	return p, p != "" && p != "(null)"
}

// PrologFlagsAlloc reports whether a PrologFlags value ("Alloc,Contain",
// "alloc", "(null)") holds Alloc, or a flag that implies it (Contain,
// RunInJob imply Alloc in Slurm).
func PrologFlagsAlloc(flags string) bool {
	for _, f := range strings.Split(flags, ",") {
		switch strings.ToLower(strings.TrimSpace(f)) {
		case "alloc", "contain", "runinjob":
			return true
		}
	}
	return false
}

// AuthSocket returns the munge socket named by an AuthInfo value
// ("socket=/run/munge/munge.socket.2,ttl=60"), "" when none.
func AuthSocket(authInfo string) string {
	for _, p := range strings.Split(authInfo, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(k, "socket") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
