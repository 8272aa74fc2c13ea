package merge

import (
	"encoding/json"
	"strings"
)

// path is where a value sits in an object. shown is the path of conflict
// reports, matched by PathRules: ".spec.containers[name=\"web\"].image".
// schema drops the item selectors (".spec.containers.image") and is matched
// by ListRules. name and parent are the last two field names, for the
// default list heuristic.
type path struct {
	shown, schema string
	name, parent  string
}

func (p path) field(name string) path {
	seg := "." + name
	if !plainField(name) {
		q, _ := json.Marshal(name) // a string always marshals
		seg = "[" + string(q) + "]"
	}
	return path{shown: p.shown + seg, schema: p.schema + seg, name: name, parent: p.name}
}

// item is the path of the list item that sel ("name=\"web\"") selects.
func (p path) item(sel string) path {
	p.shown += "[" + sel + "]"
	return p
}

// plainField: a name that can follow a '.' in a path without ambiguity.
func plainField(name string) bool {
	return name != "" && strings.IndexFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-')
	}) < 0
}

// under says whether path p lies at or below prefix: ".spec" covers ".spec"
// and ".spec.replicas" but not ".specs"; "" covers everything.
func under(p, prefix string) bool {
	if !strings.HasPrefix(p, prefix) {
		return false
	}
	return len(p) == len(prefix) || prefix == "" || p[len(prefix)] == '.' || p[len(prefix)] == '['
}
