package gitrepo

import (
	"path/filepath"
	"testing"
)

func TestStateFiles(t *testing.T) {
	r, err := Open(filepath.Join(t.TempDir(), "repo.git"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if data, err := r.ReadState("compacted/team-a"); err != nil || data != nil {
		t.Fatalf("missing state = %q, %v; want nil, nil", data, err)
	}
	for _, v := range []string{"1\n", "22\n"} {
		if err := r.WriteState("compacted/team-a", []byte(v)); err != nil {
			t.Fatal(err)
		}
		if data, err := r.ReadState("compacted/team-a"); err != nil || string(data) != v {
			t.Fatalf("state = %q, %v; want %q", data, err, v)
		}
	}
}
