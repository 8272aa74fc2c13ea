package merge

import (
	"errors"
	"fmt"
	"strings"
)

// Resolution says which side a conflict takes.
type Resolution string

const (
	// PreferSource takes the source's value ("theirs": the branch being
	// merged in).
	PreferSource Resolution = "PreferSource"
	// PreferTarget keeps the target's value ("ours").
	PreferTarget Resolution = "PreferTarget"
	// Manual resolves nothing: a merge with a Manual conflict leaves the
	// target untouched and reports its conflicts.
	Manual Resolution = "Manual"
)

// PathRule resolves the conflicts at and below a path.
type PathRule struct {
	// Resource restricts the rule to one resource, "<group or core>/<resource>"
	// ("apps/deployments", "core/configmaps"); empty for every resource.
	Resource string
	// Path is a JSON path prefix in the form of Conflict.Path (".status",
	// ".metadata.labels", ".spec.containers[name=\"web\"]"); empty (or ".")
	// for the whole object, which also covers a create, edit or delete of the
	// object itself.
	Path       string
	Resolution Resolution
}

// Policy resolves conflicts: the rule with the longest Path covering the
// conflict wins, a rule for the object's resource before one for every
// resource, then the earlier rule; then the same among the Fallback rules;
// Default when no rule covers it.
type Policy struct {
	// Default resolves conflicts no rule covers; empty means Manual, so that
	// nothing is ever resolved without being asked for.
	Default Resolution
	Rules   []PathRule
	// Fallback rules resolve what Rules do not cover, before Default: the
	// built-in rules of merges (KubernetesRules), which a user's rule
	// overrides wherever it reaches.
	Fallback []PathRule
}

// KubernetesRules resolve the conflicts Kubernetes' own division of labour
// settles: an object's status is written by its controller (or node
// agent) alone, in its own heaven, so a status conflict is two reports of
// that writer's, and the one being merged in is the newer there. Managed
// fields, each API server's record of who last set which field for
// server-side apply, merge entry by entry (the newer of each manager's);
// a list that cannot merge so (entries without a manager) keeps the
// target's record: which field values merged is the merge's business.
var KubernetesRules = []PathRule{
	{Path: ".status", Resolution: PreferSource},
	{Path: ".metadata.managedFields", Resolution: PreferTarget},
}

// Resolve returns the resolution of a conflict at path in an object of
// resource.
func (p Policy) Resolve(resource, path string) Resolution {
	res := p.Default
	if r, ok := bestRule(p.Rules, resource, path); ok {
		res = r.Resolution
	} else if r, ok := bestRule(p.Fallback, resource, path); ok {
		res = r.Resolution
	}
	if res == "" {
		return Manual
	}
	return res
}

// bestRule is the rule of rules that covers a conflict at path in an
// object of resource, if any.
func bestRule(rules []PathRule, resource, path string) (PathRule, bool) {
	best, found := PathRule{}, false
	for _, r := range rules {
		rp := rulePath(r.Path)
		if r.Resource != "" && r.Resource != resource || !under(path, rp) {
			continue
		}
		if !found || len(rp) > len(rulePath(best.Path)) ||
			len(rp) == len(rulePath(best.Path)) && best.Resource == "" && r.Resource != "" {
			best, found = r, true
		}
	}
	return best, found
}

// Validate returns every problem of the policy at once.
func (p Policy) Validate() error {
	var errs []error
	if !validResolution(p.Default, true) {
		errs = append(errs, fmt.Errorf("default resolution %q: must be one of %s, %s, %s", p.Default, PreferSource, PreferTarget, Manual))
	}
	seen := map[[2]string]bool{}
	for i, r := range p.Rules {
		if !validResolution(r.Resolution, false) {
			errs = append(errs, fmt.Errorf("rule %d: resolution %q: must be one of %s, %s, %s", i, r.Resolution, PreferSource, PreferTarget, Manual))
		}
		if r.Path != "" && !strings.HasPrefix(r.Path, ".") && !strings.HasPrefix(r.Path, "[") {
			errs = append(errs, fmt.Errorf("rule %d: path %q: must start with '.' or '['", i, r.Path))
		}
		if r.Resource != "" && strings.Count(r.Resource, "/") != 1 {
			errs = append(errs, fmt.Errorf("rule %d: resource %q: must be <group or core>/<resource>", i, r.Resource))
		}
		k := [2]string{r.Resource, rulePath(r.Path)}
		if seen[k] {
			errs = append(errs, fmt.Errorf("rule %d: another rule has resource %q and path %q", i, r.Resource, r.Path))
		}
		seen[k] = true
	}
	return errors.Join(errs...)
}

func validResolution(r Resolution, emptyOK bool) bool {
	return r == PreferSource || r == PreferTarget || r == Manual || emptyOK && r == ""
}

// rulePath maps "." (the whole object, as users write it) to "".
func rulePath(p string) string {
	if p == "." {
		return ""
	}
	return p
}
