package v1alpha1

import (
	"fmt"
	"regexp"
)

// RootHeaven is the heaven that holds heaven.dev objects.
const RootHeaven = "root"

// MaxHeavenNameLength keeps a heaven name a DNS label (and a short branch).
const MaxHeavenNameLength = 63

var heavenNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateHeavenName accepts DNS labels: lowercase letters, digits and '-',
// starting and ending with a letter or digit, at most 63 characters. Such a
// name is a safe URL path segment and git branch name, and no heaven's
// branch can be a directory of another's (refs/heads/team against
// refs/heads/team/x): heaven-server's branches are heaven names only.
func ValidateHeavenName(name string) error {
	if len(name) > MaxHeavenNameLength {
		return fmt.Errorf("heaven name %q is longer than %d characters", name, MaxHeavenNameLength)
	}
	if !heavenNameRE.MatchString(name) {
		return fmt.Errorf("heaven name %q is not valid: want lowercase letters, digits and '-', starting and ending with a letter or digit", name)
	}
	return nil
}
