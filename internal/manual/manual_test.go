package manual

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestNewFree(t *testing.T) {
	before := InUse()
	if b := New(0); b != nil {
		t.Fatalf("New(0) = %d bytes, want nil", len(b))
	}
	var bufs [][]byte
	for _, n := range []int{1, pageSize - 1, pageSize, pageSize + 1, 3 << 20} {
		b := New(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("New(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i, c := range b {
			if c != 0 {
				t.Fatalf("New(%d)[%d] = %d, want a zeroed buffer", n, i, c)
			}
		}
		for i := range b {
			b[i] = byte(i)
		}
		bufs = append(bufs, b)
	}
	if got, want := InUse()-before, int64(1+pageSize-1+pageSize+pageSize+1+3<<20); got != want {
		t.Fatalf("InUse grew by %d, want %d", got, want)
	}
	for _, b := range bufs {
		if b[len(b)-1] != byte(len(b)-1) {
			t.Fatalf("a buffer of %d bytes lost its last byte", len(b))
		}
		Free(b)
	}
	Free(nil)
	if got := InUse(); got != before {
		t.Fatalf("InUse = %d after freeing everything, want %d", got, before)
	}
}

// TestUseAfterFreeFaults runs itself in a child process that reads a freed
// buffer under CheckUseAfterFree: the child must die of the fault.
func TestUseAfterFreeFaults(t *testing.T) {
	if os.Getenv("MANUAL_USE_AFTER_FREE") == "1" {
		CheckUseAfterFree()
		b := New(100)
		b[0] = 1
		Free(b)
		println("read after free:", b[0]) // faults
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUseAfterFreeFaults$")
	cmd.Env = append(os.Environ(), "MANUAL_USE_AFTER_FREE=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child read freed memory and exited cleanly:\n%s", out)
	}
	if !strings.Contains(string(out), "fault") || strings.Contains(string(out), "read after free:") {
		t.Fatalf("the child failed, but not by faulting on the freed buffer: %v\n%s", err, out)
	}
}
