package etcdv3

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrefixRouting(t *testing.T) {
	cases := []struct {
		name             string
		key, end         string
		wantBranch       string
		wantKey, wantEnd string
		wantErr          bool
	}{
		{name: "point", key: "/a/registry/x", wantBranch: "a", wantKey: "/registry/x"},
		{name: "branch root", key: "/a/", wantBranch: "a", wantKey: "/"},
		{name: "range inside", key: "/a/r/", end: "/a/r0", wantBranch: "a", wantKey: "/r/", wantEnd: "/r0"},
		{name: "from key", key: "/a/r", end: "\x00", wantBranch: "a", wantKey: "/r", wantEnd: "\x00"},
		{name: "branch prefix end", key: "/a/", end: "/a0", wantBranch: "a", wantKey: "/", wantEnd: "\x00"},
		{name: "end before start is empty", key: "/a/x", end: "/a", wantBranch: "a", wantKey: "/x", wantEnd: "/x"},
		{name: "end in other branch", key: "/a/x", end: "/b/y", wantErr: true},
		{name: "end past branch", key: "/a/x", end: "/b", wantErr: true},
		{name: "no branch", key: "/x", wantErr: true},
		{name: "no slash", key: "x", wantErr: true},
		{name: "bare branch", key: "/a", wantErr: true},
		{name: "empty branch", key: "//x", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := router{}.newScope()
			var end []byte
			if tc.end != "" {
				end = []byte(tc.end)
			}
			k, e := sc.interval([]byte(tc.key), end)
			branch, err := sc.done()
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantBranch, branch)
			require.Equal(t, tc.wantKey, string(k))
			require.Equal(t, tc.wantEnd, string(e))
		})
	}
}

func TestOneRequestStaysInOneBranch(t *testing.T) {
	sc := router{}.newScope()
	sc.point([]byte("/a/x"))
	sc.point([]byte("/b/x"))
	_, err := sc.done()
	require.ErrorContains(t, err, `is in branch "b" but the request is for branch "a"`)

	single := router{single: "main"}.newScope()
	k, e := single.interval([]byte("/b/x"), []byte("\x00"))
	branch, err := single.done()
	require.NoError(t, err)
	require.Equal(t, "main", branch)
	require.Equal(t, "/b/x", string(k))
	require.Equal(t, "\x00", string(e))
}

func TestClientKeysGetTheirBranchBack(t *testing.T) {
	require.Equal(t, "/a/registry/x", string(router{}.clientKey("a", []byte("/registry/x"))))
	require.Equal(t, "/registry/x", string(router{single: "a"}.clientKey("a", []byte("/registry/x"))))
}
