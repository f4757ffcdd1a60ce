package ncclras

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/internal/ostest"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// rasAnswerEnv makes the test binary a fake RAS service that answers with
// the variable's text: it prints its address and serves until stdin ends.
const rasAnswerEnv = "VIGIL_TEST_FAKE_RAS_ANSWER"

// TestFakeRASService is the fake service's body when rasAnswerEnv is set;
// otherwise it does nothing.
func TestFakeRASService(t *testing.T) {
	answer := os.Getenv(rasAnswerEnv)
	if answer == "" {
		return
	}
	s := newFakeServer(t, answer)
	fmt.Println(s.addr())
	bufio.NewScanner(os.Stdin).Scan()
}

// TestQueryIgnoresAnotherUsersListener has a process of uid nobody hold a
// port and answer on it as RAS does, naming a dead rank. The watcher (here
// root, in production the job's user) does not read its answer: it is
// ErrNotRAS and ErrNotJobs, naming the uid that holds the port.
func TestQueryIgnoresAnotherUsersListener(t *testing.T) {
	cmd := ostest.AsNobody(t, "TestFakeRASService", rasAnswerEnv+"="+fixture(t, "built-2.26-hang.txt"))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the fake service as nobody: %v", err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("the fake service printed no address")
	}
	addr := strings.TrimSpace(sc.Text())

	st, err := Query(context.Background(), addr, 5*time.Second)
	if !errors.Is(err, ErrNotJobs) || !errors.Is(err, ErrNotRAS) {
		t.Fatalf("Query of nobody's listener: %+v, %v; want ErrNotJobs", st, err)
	}
	if !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("error %q does not name the port's holder", err)
	}
	if st.DeadCount != 0 {
		t.Errorf("a stranger's answer was read: %d dead", st.DeadCount)
	}

	// The same answer from a listener of the watcher's own user is read.
	mine := newFakeServer(t, fixture(t, "built-2.26-hang.txt"))
	if st, err := Query(context.Background(), mine.addr(), 5*time.Second); err != nil || st.DeadCount != 1 {
		t.Fatalf("Query of the user's own listener: %d dead, %v", st.DeadCount, err)
	}
}

// TestSocketUIDNotOnThisHost: a connection whose serving socket is not in
// the host's tables (a service elsewhere) is not trusted.
func TestSocketUIDNotOnThisHost(t *testing.T) {
	_, err := SocketUID("/proc", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1},
		&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 28028})
	if err == nil || !strings.Contains(err.Error(), "not on this host") {
		t.Fatalf("err = %v, want not on this host", err)
	}
}
