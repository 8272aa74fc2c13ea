// Package githook is the pre-receive hook of heaven-server's repository: it
// refuses a push whose files the server would not serve, and names each
// file and what is wrong with it, so the person pushing reads it in the
// output of `git push`. It runs for every transport that runs hooks (a
// local path, git daemon, ssh, smart HTTP); what bypasses hooks (git
// update-ref, other tools writing the repository) is still read tolerantly
// by the store (a file that can't be served keeps its key's last good
// value).
//
// The hook is the heaven-server binary itself (`heaven-server hook
// pre-receive`), installed into <repository>/hooks/pre-receive by the
// server on every start (Install), so that it checks with the same rules as
// the server that reads the files.
package githook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/objectfile"
)

const zeroHash = "0000000000000000000000000000000000000000"

// PreReceive checks the ref updates git passes on in ("<old> <new> <ref>"
// lines, as git runs a pre-receive hook, in the repository's directory or
// with GIT_DIR set). Every problem is written to out, one line per file;
// the error is non-nil when the push must be refused.
func PreReceive(ctx context.Context, in io.Reader, out io.Writer, reader *objectfile.Reader) error {
	objects, err := startCatFile(ctx)
	if err != nil {
		return err
	}
	defer objects.close()
	refused := 0
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) != 3 {
			return fmt.Errorf("unexpected pre-receive input %q", lines.Text())
		}
		old, new, ref := fields[0], fields[1], fields[2]
		if !strings.HasPrefix(ref, "refs/heads/") || new == zeroHash {
			continue // only heaven branches hold objects; deleting one is git's business
		}
		problems, err := checkUpdate(ctx, objects, reader, old, new)
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		for _, p := range problems {
			fmt.Fprintf(out, "heaven: %s: %s: %s\n", strings.TrimPrefix(ref, "refs/heads/"), p.path, p.err)
		}
		refused += len(problems)
	}
	if err := lines.Err(); err != nil {
		return err
	}
	if refused > 0 {
		fmt.Fprintf(out, "heaven: push refused: %d file(s) the server would not serve; fix them and push again\n", refused)
		return fmt.Errorf("%d file(s) refused", refused)
	}
	return nil
}

type problem struct{ path, err string }

// checkUpdate checks the files that a ref update from old to new adds or
// changes (every file, for a new ref).
func checkUpdate(ctx context.Context, objects *catFile, reader *objectfile.Reader, old, new string) ([]problem, error) {
	files, err := changedFiles(ctx, old, new)
	if err != nil {
		return nil, err
	}
	custom := func(gr schema.GroupResource) (objectfile.Type, bool) { return crdType(objects, new, gr) }
	var problems []problem
	for _, f := range files {
		if msg := checkFile(objects, reader, custom, f); msg != "" {
			problems = append(problems, problem{f.path, msg})
		}
	}
	return problems, nil
}

// checkFile returns what is wrong with one file, "" if nothing.
func checkFile(objects *catFile, reader *objectfile.Reader, custom objectfile.CustomTypes, f file) string {
	if f.mode == "160000" {
		return "a submodule is no object"
	}
	stem, ext, ok := gitstore.SplitValueFile(f.path)
	if !ok {
		if strings.Count(f.path, "/") >= 2 {
			return "the server reads only .json and .yaml files of objects; this file would be ignored"
		}
		return "" // a README beside the objects
	}
	key, err := gitstore.PathKey(stem)
	if err != nil {
		return fmt.Sprintf("the path maps to no key: %v", err)
	}
	content, err := objects.blob(f.blob)
	if err != nil {
		return fmt.Sprintf("cannot be read: %v", err)
	}
	if _, err := reader.ReadWith(key, content, ext, custom); err != nil {
		return err.Error()
	}
	return ""
}

type file struct{ mode, blob, path string }

// changedFiles lists the files added or changed from old to new: every
// file of new when old is the zero hash.
func changedFiles(ctx context.Context, old, new string) ([]file, error) {
	var out []byte
	var err error
	if old == zeroHash {
		out, err = gitOutput(ctx, "ls-tree", "-r", "-z", "--full-tree", new)
	} else {
		out, err = gitOutput(ctx, "diff-tree", "-r", "-z", "--no-renames", "--diff-filter=AMT", old, new)
	}
	if err != nil {
		return nil, err
	}
	var files []file
	for rec := range bytes.SplitSeq(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		if old == zeroHash {
			// "<mode> <type> <hash>\t<path>"
			meta, path, ok := bytes.Cut(rec, []byte{'\t'})
			f := strings.Fields(string(meta))
			if !ok || len(f) != 3 {
				return nil, fmt.Errorf("unexpected ls-tree output %q", rec)
			}
			files = append(files, file{mode: f[0], blob: f[2], path: string(path)})
			continue
		}
		files = append(files, file{path: string(rec)})
	}
	if old != zeroHash {
		return diffFiles(files)
	}
	return files, nil
}

// diffFiles pairs diff-tree -z records (":<modes> <hashes> <status>", then
// the path) into files.
func diffFiles(recs []file) ([]file, error) {
	var files []file
	for i := 0; i+1 < len(recs); i += 2 {
		f := strings.Fields(strings.TrimPrefix(recs[i].path, ":"))
		if len(f) != 5 {
			return nil, fmt.Errorf("unexpected diff-tree output %q", recs[i].path)
		}
		files = append(files, file{mode: f[1], blob: f[3], path: recs[i+1].path})
	}
	return files, nil
}

// crdType reads the type of a custom resource from its CRD in commit's
// tree, if there is one.
func crdType(objects *catFile, commit string, gr schema.GroupResource) (objectfile.Type, bool) {
	stem := gitstore.KeyPath("/apiextensions.k8s.io/customresourcedefinitions/" + gr.Resource + "." + gr.Group)
	for _, ext := range []string{".json", ".yaml"} {
		content, err := objects.blob(commit + ":" + stem + ext)
		if err != nil {
			continue
		}
		var crd struct {
			Spec struct {
				Names struct{ Kind string }
				Scope string
			}
		}
		if yaml.Unmarshal(content, &crd) != nil || crd.Spec.Names.Kind == "" {
			return objectfile.Type{}, false
		}
		return objectfile.Type{Kind: crd.Spec.Names.Kind, Namespaced: crd.Spec.Scope != "Cluster"}, true
	}
	return objectfile.Type{}, false
}

func gitOutput(ctx context.Context, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// catFile reads objects through one `git cat-file --batch`, which sees the
// objects of the push being checked (git runs the hook with them in
// quarantine).
type catFile struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startCatFile(ctx context.Context) (*catFile, error) {
	cmd := exec.CommandContext(ctx, "git", "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	return &catFile{cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

var errMissing = errors.New("no such object")

// blob returns the content of the blob named by rev (a hash or
// "<commit>:<path>").
func (c *catFile) blob(rev string) ([]byte, error) {
	if _, err := fmt.Fprintln(c.in, rev); err != nil {
		return nil, err
	}
	header, err := c.out.ReadString('\n')
	if err != nil {
		return nil, err
	}
	f := strings.Fields(header)
	if len(f) == 2 && f[1] == "missing" {
		return nil, errMissing
	}
	var size int
	if len(f) != 3 || f[1] != "blob" {
		if len(f) == 3 {
			if _, err := fmt.Sscan(f[2], &size); err == nil {
				_, _ = c.out.Discard(size + 1)
			}
		}
		return nil, fmt.Errorf("%s is not a file", rev)
	}
	if _, err := fmt.Sscan(f[2], &size); err != nil {
		return nil, err
	}
	data := make([]byte, size+1)
	if _, err := io.ReadFull(c.out, data); err != nil {
		return nil, err
	}
	return data[:size], nil
}

func (c *catFile) close() {
	c.in.Close()
	_ = c.cmd.Wait()
}
