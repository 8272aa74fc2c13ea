package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// verify checks the model against the branch's history and the served
// objects: every acknowledged write is in the history; the last one of an
// object is what the server serves unless a later commit changed the
// object's file; revisions never went backwards; and every object served
// is the one its file holds.
func verify(t *testing.T, srv *server, m *model) {
	t.Helper()
	ctx := context.Background()
	for _, b := range m.backwards {
		t.Errorf("revision went backwards: %s", b)
	}
	hist, err := fileHistory(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := newCatFile(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.close()
	kube := srv.kubeTimeout(t, 2*time.Minute)
	served, err := kube.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	for name, writes := range m.writes {
		path := dir + name + ".json"
		changes := hist[path] // newest first
		// Where each acknowledged write is in the history.
		at := make([]int, len(writes))
		for i, w := range writes {
			at[i] = -1
			for j, c := range changes {
				if w.value == "" && c.deleted || w.value != "" && !c.deleted && blobs.value(c.commit, path) == w.value {
					at[i] = j
					break
				}
			}
			if at[i] < 0 {
				t.Errorf("%s: acknowledged write %q (revision %d) is not in the branch's history", name, w.value, w.rev)
			}
		}
		last := writes[len(writes)-1]
		if at[len(at)-1] != 0 {
			continue // a later commit changed the file (a write cut off by a kill, a force-push)
		}
		cm, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case last.value == "" && !apierrors.IsNotFound(err):
			t.Errorf("%s: deleted (acknowledged) and no later commit, yet served: %v", name, err)
		case last.value != "" && err != nil:
			t.Errorf("%s: last acknowledged value %q, and no later commit, yet: %v", name, last.value, err)
		case last.value != "" && cm.Data["v"] != last.value:
			t.Errorf("%s: last acknowledged value %q, and no later commit, yet %q is served", name, last.value, cm.Data["v"])
		}
	}

	// What is served is what the head's files hold.
	for _, cm := range served.Items {
		v, found := "", false
		for _, ext := range []string{".json", ".yaml"} {
			if v = blobs.value("refs/heads/"+heaven, dir+cm.Name+ext); v != "" {
				found = true
				break
			}
		}
		if !found || v != cm.Data["v"] {
			t.Errorf("%s: served with v=%q, but the branch's file holds %q", cm.Name, cm.Data["v"], v)
		}
		if strings.HasPrefix(cm.Name, "bad-") {
			t.Errorf("%s: a bad file is served", cm.Name)
		}
	}
}

// change is one commit of the branch's first-parent history that changed
// a file.
type change struct {
	commit  string
	deleted bool
}

// fileHistory lists, per file of the namespace's config maps, the commits
// of the branch's history that changed it, newest first. A merge counts
// as changing what differs from its first parent: for a person's pull
// before a push that is everything the store did since their last pull,
// so it can only make the check below more lenient, never fail it.
func fileHistory(ctx context.Context, srv *server) (map[string][]change, error) {
	out, err := srv.git(ctx, "log", "--date-order", "--no-renames", "--diff-merges=first-parent", "--format=commit %H",
		"--name-status", "refs/heads/"+heaven, "--", dir)
	if err != nil {
		return nil, fmt.Errorf("git log: %v: %s", err, out)
	}
	hist := map[string][]change{}
	var commit string
	for _, line := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(line, "commit "); ok {
			commit = c
			continue
		}
		status, path, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		hist[path] = append(hist[path], change{commit: commit, deleted: status == "D"})
	}
	return hist, nil
}

// catFile reads file contents through one git cat-file --batch.
type catFile struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func newCatFile(ctx context.Context, srv *server) (*catFile, error) {
	cmd := exec.CommandContext(ctx, "git", "--git-dir", srv.repo(), "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	return &catFile{cmd: cmd, in: in, out: bufio.NewReader(out)}, cmd.Start()
}

// value returns data.v of the config map file at rev:path ("" if none).
func (c *catFile) value(rev, path string) string {
	fmt.Fprintf(c.in, "%s:%s\n", rev, path)
	header, err := c.out.ReadString('\n')
	if err != nil {
		return ""
	}
	f := strings.Fields(header)
	if len(f) != 3 {
		return "" // missing
	}
	var size int
	fmt.Sscan(f[2], &size)
	data := make([]byte, size+1)
	if _, err := io.ReadFull(c.out, data); err != nil {
		return ""
	}
	var cm struct{ Data map[string]string }
	if yaml.Unmarshal(bytes.TrimSuffix(data, []byte("\n")), &cm) != nil {
		return ""
	}
	return cm.Data["v"]
}

func (c *catFile) close() {
	c.in.Close()
	_ = c.cmd.Wait()
}
