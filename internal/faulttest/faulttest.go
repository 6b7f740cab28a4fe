// Package faulttest checks, for tests, that a read of memory that was freed
// or parked kills the process with a fault: the test runs itself again in a
// child process, which does the read, and the parent checks how it died.
package faulttest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// ExpectFault runs the test t again in a child process with the environment
// variable env set to 1, and fails t unless the child died of a fault,
// having printed want (if not empty) and not printed after, the line that
// follows the faulting read. The test does the read itself when it finds
// env set, and does nothing else then.
func ExpectFault(t *testing.T, env, want, after string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child exited cleanly:\n%s", out)
	}
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "fault") || strings.Contains(string(out), after) {
		t.Fatalf("the child did not fault where it should: %v\n%s", err, out)
	}
}
