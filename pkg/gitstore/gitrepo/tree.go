package gitrepo

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrBadTree: tree entries git fsck would reject (unsorted, duplicate,
// bad name or mode, zero hash).
var ErrBadTree = errors.New("gitrepo: invalid tree")

// treeMode is the spelling of a mode in a tree: octal without leading
// zeros (a zero-padded mode fails git fsck), followed by a space.
func treeMode(m filemode.FileMode) (string, bool) {
	switch m {
	case filemode.Regular:
		return "100644 ", true
	case filemode.Executable:
		return "100755 ", true
	case filemode.Symlink:
		return "120000 ", true
	case filemode.Dir:
		return "40000 ", true
	case filemode.Submodule:
		return "160000 ", true
	}
	return "", false
}

// AppendTree appends the git encoding of a tree to dst: per entry
// "<mode> <name>\x00<20-byte hash>". Entries must be in git order (names
// compared bytewise, a directory's name as if it ended in '/'). It checks
// what git fsck --strict checks and, unlike go-git's Tree.Encode, neither
// formats with fmt nor allocates per entry: a 1,000-entry tree encodes
// several times faster (BenchmarkTreeEncode).
func AppendTree(dst []byte, entries []object.TreeEntry) ([]byte, error) {
	size := 0
	for i := range entries {
		size += len(entries[i].Name) + 7 + 1 + 20
	}
	if cap(dst)-len(dst) < size {
		dst = append(make([]byte, 0, len(dst)+size), dst...)
	}
	for i := range entries {
		e := &entries[i]
		mode, ok := treeMode(e.Mode)
		if !ok {
			return nil, fmt.Errorf("%w: %q has mode %o", ErrBadTree, e.Name, uint32(e.Mode))
		}
		if err := checkEntryName(e.Name); err != nil {
			return nil, err
		}
		if e.Hash.IsZero() {
			return nil, fmt.Errorf("%w: %q has the zero hash", ErrBadTree, e.Name)
		}
		if i > 0 && compareEntries(&entries[i-1], e) >= 0 {
			return nil, fmt.Errorf("%w: %q and %q are not in git order", ErrBadTree, entries[i-1].Name, e.Name)
		}
		if e.Mode == filemode.Dir && hasFileNamed(entries[:i], e.Name) {
			return nil, fmt.Errorf("%w: %q is both a file and a directory", ErrBadTree, e.Name)
		}
		dst = append(dst, mode...)
		dst = append(dst, e.Name...)
		dst = append(dst, 0)
		dst = append(dst, e.Hash[:]...)
	}
	return dst, nil
}

func checkEntryName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) == 4 && strings.EqualFold(name, ".git") ||
		strings.IndexByte(name, '/') >= 0 || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%w: entry name %q", ErrBadTree, name)
	}
	return nil
}

// compareEntries is git's base_name_compare.
func compareEntries(a, b *object.TreeEntry) int {
	n := min(len(a.Name), len(b.Name))
	if c := strings.Compare(a.Name[:n], b.Name[:n]); c != 0 {
		return c
	}
	return int(nextChar(a, n)) - int(nextChar(b, n))
}

// nextChar is the byte of e's name at n, or what git compares after the
// end of a name: '/' for a directory, NUL otherwise.
func nextChar(e *object.TreeEntry, n int) byte {
	switch {
	case n < len(e.Name):
		return e.Name[n]
	case e.Mode == filemode.Dir:
		return '/'
	}
	return 0
}

// hasFileNamed reports whether sorted holds a non-directory called name.
// Such an entry sorts before the directory but not necessarily next to
// it ("a", "a.txt", "a/").
func hasFileNamed(sorted []object.TreeEntry, name string) bool {
	probe := object.TreeEntry{Name: name, Mode: filemode.Regular}
	i := sort.Search(len(sorted), func(i int) bool { return compareEntries(&sorted[i], &probe) >= 0 })
	return i < len(sorted) && sorted[i].Name == name
}
