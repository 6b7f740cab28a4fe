package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale/bloom"
)

// TestExportFilterFile: the file export-filter writes decodes to a filter
// that holds the live keys of the range and, at p = 1e-6, none of the
// others.
func TestExportFilterFile(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	sh, err := newShell(&out, filepath.Join(dir, "store"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.close()
	file := filepath.Join(dir, "deny.bloom")
	for _, line := range []string{"put a 1", "put b 2", "put c 3", "put d 4", "del c",
		`export-filter "` + file + `" b z p=0.000001`} {
		sh.exec(line)
	}
	if !strings.Contains(out.String(), "2 items") || strings.Contains(out.String(), "error") {
		t.Fatalf("kvsh printed:\n%s", out.String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var f bloom.Filter
	if err := f.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"a": false, "b": true, "c": false, "d": true, "e": false} {
		if f.MayContain([]byte(key)) != want {
			t.Errorf("MayContain(%s) = %v, want %v", key, !want, want)
		}
	}
}
