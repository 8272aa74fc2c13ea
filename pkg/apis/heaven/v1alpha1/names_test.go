package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// FuzzHeavenNames: a valid heaven name is a valid branch, and no two valid
// names make refs that git can't hold side by side (one a directory of
// the other), so no heaven can block another's writes.
func FuzzHeavenNames(f *testing.F) {
	for _, seed := range [][2]string{{"team", "team/x"}, {"team", "team-x"}, {"a", "a.lock"}, {"root", "ROOT"}, {"x..y", "x"}, {"-a", "a-"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, name := range []string{a, b} {
			if v1alpha1.ValidateHeavenName(name) != nil {
				continue
			}
			if err := gitstore.ValidateBranchName(name); err != nil {
				t.Fatalf("heaven name %q is no branch: %v", name, err)
			}
			if strings.ContainsAny(name, "/.") || len(name) > v1alpha1.MaxHeavenNameLength {
				t.Fatalf("heaven name %q could collide with another's ref or path", name)
			}
		}
		if v1alpha1.ValidateHeavenName(a) == nil && v1alpha1.ValidateHeavenName(b) == nil && a != b &&
			(strings.HasPrefix("refs/heads/"+b, "refs/heads/"+a+"/") || strings.HasPrefix("refs/heads/"+a, "refs/heads/"+b+"/")) {
			t.Fatalf("refs of %q and %q collide", a, b)
		}
	})
}
