package merge

import "fmt"

// Conflict is a value both sides changed differently, or that one side
// changed and the other deleted. Every conflict is reported, however it was
// resolved.
type Conflict struct {
	// Key is the object, as given to Merge or MergeTree.
	Key string
	// Path is the JSON path of the value within the object
	// (".spec.containers[name=\"web\"].image", ".metadata.labels[\"app.kubernetes.io/name\"]");
	// empty for the object itself (an edit against a delete, or a value that
	// is not JSON).
	Path string
	// Base, Target and Source are the value on each side: compact JSON, or
	// the stored bytes of a value that is not JSON; nil where it is absent.
	Base, Target, Source []byte
	// Resolution is how the conflict was resolved.
	Resolution Resolution
}

func (c Conflict) String() string {
	return fmt.Sprintf("%s %s: base %s, target %s, source %s: %s",
		c.Key, c.Path, show(c.Base), show(c.Target), show(c.Source), c.Resolution)
}

func show(b []byte) string {
	if b == nil {
		return "<absent>"
	}
	return string(b)
}

// conflict records a conflict at p and returns the value that resolves it;
// the value of a Manual conflict does not matter, as the merge writes nothing.
func (x *merger) conflict(p path, base, target, source *node) *node {
	res := x.policy.Resolve(x.resource, p.shown)
	x.conflicts = append(x.conflicts, Conflict{
		Key:        x.key,
		Path:       p.shown,
		Base:       bytesOf(base),
		Target:     bytesOf(target),
		Source:     bytesOf(source),
		Resolution: res,
	})
	if res == PreferSource {
		return source
	}
	return target
}
