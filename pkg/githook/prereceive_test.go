package githook

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/heaven-dev/heaven/pkg/objectfile"
)

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// commit writes files (content "" removes one) in work tree wd and commits.
func commit(t *testing.T, wd string, files map[string]string) string {
	t.Helper()
	for path, content := range files {
		p := filepath.Join(wd, path)
		if content == "" {
			require.NoError(t, os.Remove(p))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	run(t, wd, "add", "-A")
	run(t, wd, "commit", "-qm", "c", "--allow-empty")
	return run(t, wd, "rev-parse", "HEAD")
}

const goodCM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: default}\n"

func TestPreReceive(t *testing.T) {
	reader := &objectfile.Reader{Types: map[schema.GroupResource]objectfile.Type{
		{Resource: "configmaps"}: {Kind: "ConfigMap", Namespaced: true},
	}, MaxBytes: 4096}
	wd := t.TempDir()
	run(t, wd, "init", "-q", "-b", "t")
	base := commit(t, wd, map[string]string{
		"README.md":                      "notes",
		"core/configmaps/default/a.yaml": strings.Replace(goodCM, "%s", "a", 1),
	})
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"kind":"Widget","plural":"widgets"}}}`

	for _, tc := range []struct {
		name  string
		files map[string]string
		bad   []string // paths named in the output
	}{
		{name: "good files", files: map[string]string{
			"core/configmaps/default/b.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"default"}}`,
			"docs/more.md":                   "more notes",
		}},
		{name: "truncated JSON", files: map[string]string{"core/configmaps/default/b.json": `{"apiVersion":`},
			bad: []string{"core/configmaps/default/b.json: not valid JSON"}},
		{name: "unknown path and misplaced kind", files: map[string]string{
			"notes.json":                   `{"a":1}`,
			"core/secrets/default/a.yaml":  strings.Replace(goodCM, "%s", "a", 1),
			"core/configmaps/default/x.md": "hi",
		}, bad: []string{
			"core/configmaps/default/x.md: the server reads only .json and .yaml files",
			"notes.json: not the path of an object",
		}},
		{name: "too large", files: map[string]string{"core/configmaps/default/big.yaml": strings.Replace(goodCM, "%s", "big", 1) + "data: {x: " + strings.Repeat("y", 5000) + "}\n"},
			bad: []string{"core/configmaps/default/big.yaml: the file is"}},
		{name: "custom resource checked against its CRD in the push", files: map[string]string{
			"apiextensions.k8s.io/customresourcedefinitions/widgets.example.com.json": crd,
			"example.com/widgets/default/w.json":                                      `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"w","namespace":"default"}}`,
		}, bad: []string{"example.com/widgets/default/w.json: kind Gadget does not belong in example.com/widgets/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, wd, "checkout", "-q", "--detach", base)
			head := commit(t, wd, tc.files)
			t.Setenv("GIT_DIR", filepath.Join(wd, ".git"))
			var out bytes.Buffer
			err := PreReceive(context.Background(), strings.NewReader(base+" "+head+" refs/heads/t\n"), &out, reader)
			for _, b := range tc.bad {
				assert.Contains(t, out.String(), "heaven: t: "+b)
			}
			if len(tc.bad) == 0 {
				require.NoError(t, err, out.String())
				assert.Empty(t, out.String())
				return
			}
			require.Error(t, err)
			assert.Contains(t, out.String(), "push refused")
		})
	}

	t.Run("a new branch has every file checked", func(t *testing.T) {
		run(t, wd, "checkout", "-q", "--detach", base)
		head := commit(t, wd, map[string]string{"core/configmaps/default/a.yaml": "kind: [\n"})
		t.Setenv("GIT_DIR", filepath.Join(wd, ".git"))
		var out bytes.Buffer
		err := PreReceive(context.Background(), strings.NewReader(zeroHash+" "+head+" refs/heads/new\n"), &out, reader)
		require.Error(t, err)
		assert.Contains(t, out.String(), "heaven: new: core/configmaps/default/a.yaml: not valid YAML")
	})
	t.Run("deleting a branch and other refs pass", func(t *testing.T) {
		t.Setenv("GIT_DIR", filepath.Join(wd, ".git"))
		var out bytes.Buffer
		in := base + " " + zeroHash + " refs/heads/t\n" + zeroHash + " " + base + " refs/tags/v1\n"
		require.NoError(t, PreReceive(context.Background(), strings.NewReader(in), &out, reader))
	})
}

func TestInstall(t *testing.T) {
	repo := t.TempDir()
	hook := filepath.Join(repo, "hooks", "pre-receive")
	require.NoError(t, Install(repo, "/opt/heaven's/heaven-server"))
	data, err := os.ReadFile(hook)
	require.NoError(t, err)
	assert.Contains(t, string(data), `exec '/opt/heaven'\''s/heaven-server' hook pre-receive`)
	fi, err := os.Stat(hook)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())

	require.NoError(t, Install(repo, "/usr/bin/heaven-server"), "a moved binary rewrites the hook")
	data, _ = os.ReadFile(hook)
	assert.Contains(t, string(data), "exec '/usr/bin/heaven-server'")

	require.NoError(t, Install(repo, ""), "no executable removes our hook")
	assert.NoFileExists(t, hook)

	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	require.Error(t, Install(repo, "/usr/bin/heaven-server"), "someone else's hook is kept")
	data, _ = os.ReadFile(hook)
	assert.Equal(t, "#!/bin/sh\nexit 0\n", string(data))
}
