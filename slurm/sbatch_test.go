package slurm

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func validationJob() BatchJob {
	return BatchJob{
		Name: "vigil-idle-cn2", Node: "cn2", Partition: "vigil", QOS: "scavenger", Reservation: "", Account: "ops",
		Gres: "gpu:4", TimeLimit: 2 * time.Hour, Chdir: "/", Output: "/dev/null",
		Command: []string{"/usr/bin/srun", "--ntasks=1", "/usr/local/bin/vigil-prolog", "validate", "--config", "/etc/vigil/it's.toml"},
	}
}

func TestSubmitArgv(t *testing.T) {
	c, f := newClient(reply{out: string(readTestdata(t, "sbatch-ok.stdout"))})
	id, err := c.Submit(context.Background(), validationJob())
	if err != nil || id != "11" {
		t.Fatalf("Submit = %q, %v", id, err)
	}
	want := []string{bin + "/sbatch", "--parsable", "--job-name=vigil-idle-cn2", "--partition=vigil", "--qos=scavenger",
		"--account=ops", "--nodelist=cn2", "--nodes=1", "--ntasks=1", "--exclusive", "--mem=0", "--gres=gpu:4",
		"--time=0-02:00:00", "--chdir=/", "--output=/dev/null",
		`--wrap=exec '/usr/bin/srun' '--ntasks=1' '/usr/local/bin/vigil-prolog' 'validate' '--config' '/etc/vigil/it'\''s.toml'`}
	if !reflect.DeepEqual(f.calls, [][]string{want}) {
		t.Errorf("argv\n%q\nwant\n%q", f.calls, [][]string{want})
	}

	j := validationJob()
	j.QOS, j.Account, j.Gres, j.Chdir, j.Output, j.Reservation = "", "", "", "", "", "maint"
	got, err := j.SubmitArgv()
	want = []string{"--parsable", "--job-name=vigil-idle-cn2", "--partition=vigil", "--reservation=maint",
		"--nodelist=cn2", "--nodes=1", "--ntasks=1", "--exclusive", "--mem=0", "--time=0-02:00:00", got[len(got)-1]}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("argv %q, %v\nwant %q", got, err, want)
	}
}

func TestSubmitRefusesBadJobs(t *testing.T) {
	for name, mod := range map[string]func(*BatchJob){
		"hostlist":     func(j *BatchJob) { j.Node = "cn[1-2]" },
		"no node":      func(j *BatchJob) { j.Node = "" },
		"no command":   func(j *BatchJob) { j.Command = nil },
		"short limit":  func(j *BatchJob) { j.TimeLimit = time.Second },
		"newline":      func(j *BatchJob) { j.Partition = "a\nb" },
		"option":       func(j *BatchJob) { j.Node = "--uid=0" },
		"empty name":   func(j *BatchJob) { j.Name = "" },
		"NUL in chdir": func(j *BatchJob) { j.Chdir = "/\x00" },
	} {
		t.Run(name, func(t *testing.T) {
			c, f := newClient()
			j := validationJob()
			mod(&j)
			if _, err := c.Submit(context.Background(), j); err == nil || len(f.calls) != 0 {
				t.Errorf("err %v, calls %q", err, f.calls)
			}
		})
	}
}

func TestSubmitRefused(t *testing.T) {
	for _, file := range []string{"sbatch-nopart.stderr", "sbatch-nonode.stderr", "sbatch-noresv.stderr", "sbatch-badgres.stderr"} {
		t.Run(file, func(t *testing.T) {
			msg := string(readTestdata(t, file))
			c, _ := newClient(reply{err: &CommandError{ExitCode: 1, Stderr: strings.TrimSpace(msg), Err: errors.New("exit status 1")}})
			_, err := c.Submit(context.Background(), validationJob())
			if !errors.Is(err, ErrSubmit) {
				t.Fatalf("want ErrSubmit, got %v", err)
			}
			last := msg[strings.LastIndex(strings.TrimSpace(msg), "failed: ")+len("failed: "):]
			if !strings.Contains(err.Error(), strings.TrimSpace(last)) || strings.Contains(err.Error(), "sbatch: error") {
				t.Errorf("error %q does not say %q alone", err, strings.TrimSpace(last))
			}
		})
	}
	c, _ := newClient(reply{err: &CommandError{ExitCode: 1, Stderr: "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", Err: errors.New("exit status 1")}})
	if _, err := c.Submit(context.Background(), validationJob()); errors.Is(err, ErrSubmit) || !ControllerDown(err) {
		t.Errorf("controller down: %v", err)
	}
}

func TestParseSubmitted(t *testing.T) {
	for in, want := range map[string]string{"11\n": "11", "12;cluster\n": "12", "sbatch: warning: x\n13\n": "13"} {
		if got, err := ParseSubmitted([]byte(in)); err != nil || got != want {
			t.Errorf("%q: %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "Submitted batch job 11\n", "-1\n"} {
		if got, err := ParseSubmitted([]byte(in)); err == nil {
			t.Errorf("%q: %q, want an error", in, got)
		}
	}
}

func TestSlurmTime(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "0-00:01:00", 90 * time.Second: "0-00:02:00", 2 * time.Hour: "0-02:00:00",
		26*time.Hour + 5*time.Minute: "1-02:05:00",
	} {
		if got := SlurmTime(d); got != want {
			t.Errorf("SlurmTime(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestShellCommand(t *testing.T) {
	got := ShellCommand([]string{"/bin/echo", "a b", "$HOME", "it's", "*"})
	if want := `exec '/bin/echo' 'a b' '$HOME' 'it'\''s' '*'`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestOwnJobs(t *testing.T) {
	c, f := newClient(reply{out: string(readTestdata(t, "squeue-own.txt"))})
	jobs, err := c.OwnJobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{bin + "/squeue", "--me", "--noheader", "--states=all", "--format=%i|%T|%j"}
	if !reflect.DeepEqual(f.calls, [][]string{want}) {
		t.Errorf("argv %q, want %q", f.calls, want)
	}
	var active, preempted []string
	for _, j := range jobs {
		if j.Active() {
			active = append(active, j.ID+" "+j.Name)
		}
		if j.State == "PREEMPTED" {
			preempted = append(preempted, j.ID)
		}
	}
	if len(jobs) != 13 || !reflect.DeepEqual(active, []string{"12 vigil-idle-jakb1", "11 vigil-idle-jakb1"}) ||
		!reflect.DeepEqual(preempted, []string{"1", "3", "5", "9"}) {
		t.Errorf("jobs %+v: active %q, preempted %q", jobs, active, preempted)
	}
	if got, err := ParseOwnJobs([]byte("7|RUNNING|a|b c\n")); err != nil || got[0].Name != "a|b c" {
		t.Errorf("a name with '|': %+v, %v", got, err)
	}
	for _, bad := range []string{"7 RUNNING x\n", "x|RUNNING|y\n", "7||y\n"} {
		if _, err := ParseOwnJobs([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestReservationNodes(t *testing.T) {
	c, f := newClient(reply{out: string(readTestdata(t, "reservation.txt"))})
	nodes, err := c.ReservationNodes(context.Background(), "vigil-validate")
	if err != nil || !reflect.DeepEqual(nodes, []string{"jakb2"}) {
		t.Fatalf("nodes %q, %v", nodes, err)
	}
	if want := []string{bin + "/scontrol", "show", "reservation", "-o", "vigil-validate"}; !reflect.DeepEqual(f.calls, [][]string{want}) {
		t.Errorf("argv %q, want %q", f.calls, want)
	}
	out := string(readTestdata(t, "reservation-nosuch.stdout"))
	c, _ = newClient(reply{out: out, err: &CommandError{ExitCode: 1, Stdout: strings.TrimSpace(out), Err: errors.New("exit status 1")}})
	if _, err := c.ReservationNodes(context.Background(), "nosuch"); !errors.Is(err, ErrNoSuchReservation) {
		t.Errorf("unknown reservation: %v", err)
	}
	line := strings.Replace(string(readTestdata(t, "reservation.txt")), "Nodes=jakb2", "Nodes=gpu[01-03],cpu7", 1)
	if nodes, err := ParseReservationNodes([]byte(line), "vigil-validate"); err != nil || len(nodes) != 4 || nodes[3] != "cpu7" {
		t.Errorf("hostlist: %q, %v", nodes, err)
	}
	c, f = newClient()
	if _, err := c.ReservationNodes(context.Background(), "a b"); !errors.Is(err, ErrBadName) || len(f.calls) != 0 {
		t.Errorf("bad name: %v %q", err, f.calls)
	}
}

func TestGPUGres(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "(null)": "", "gpu:4": "gpu:4", "gpu:a100:8(S:0-1)": "gpu:a100:8",
		"gpu:a100:2(S:0),gpu:v100:2(S:1)": "gpu:a100:2,gpu:v100:2", "nic:1,gpu:2": "gpu:2", "gpus:3,shard:8": "",
	} {
		if got := GPUGres(in); got != want {
			t.Errorf("GPUGres(%q) = %q, want %q", in, got, want)
		}
	}
	n, err := ParseNode([]byte(nodeLine(t, "nodes-idle-partitions.txt", "jakb2")), "jakb2")
	if err != nil || GPUGres(n.Gres) != "gpu:2" || !reflect.DeepEqual(n.Partitions(), []string{"debug", "vval", "vusers"}) {
		t.Errorf("jakb2: %+v, %v", n, err)
	}
}
