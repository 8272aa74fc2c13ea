// Package objectfile says what makes a file on a heaven's branch an object
// the heaven can serve: where it lives (Path), and what it must hold
// (Reader.Read). heaven-server reads every file that someone else committed
// with it, and its pre-receive hook checks every pushed file with it, so a
// push is refused for exactly the files the server would not serve.
//
// A file is served when it
//   - lives at <group or "core">/<resource>/[<namespace>/]<name>.json or .yaml,
//   - is at most MaxBytes long,
//   - holds one JSON or YAML object whose apiVersion is of the path's group,
//     whose kind is the resource's, and whose metadata.name (and namespace,
//     for namespaced resources) are the path's,
//   - and, for a built-in type, decodes into it.
//
// What it serves is the object as compact JSON, what the API server itself
// stores; a person may write YAML.
package objectfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// DefaultMaxBytes is the largest file read: the most the store takes in one
// write request, so nothing served from git could not have been written
// through the API.
const DefaultMaxBytes = 1536 * 1024

// Type is what the reader knows of a built-in resource.
type Type struct {
	// Kind of the resource's objects.
	Kind string
	// Namespaced resources have a namespace level in their paths.
	Namespaced bool
	// Decode, if set, decodes an object of the type as the API server
	// reads it from storage, so that a file the server could not read is
	// refused here (a string where a number goes).
	Decode func(data []byte) error
}

// Reader reads files of heaven branches as objects.
type Reader struct {
	// Types are the built-in resources, by group and resource. Other
	// resources (custom resources) are checked for shape only.
	Types map[schema.GroupResource]Type
	// MaxBytes bounds a file; zero means DefaultMaxBytes.
	MaxBytes int
}

// Path is where an object lives on a branch.
type Path struct {
	schema.GroupResource
	Namespace string // "" for cluster-scoped objects
	Name      string
}

// ParseKey reads a store key, /<group or core>/<resource>/[<namespace>/]<name>.
func ParseKey(key string) (Path, error) {
	parts := strings.Split(strings.TrimPrefix(key, "/"), "/")
	if !strings.HasPrefix(key, "/") || len(parts) < 3 || len(parts) > 4 {
		return Path{}, fmt.Errorf("not the path of an object: objects live at <group or core>/<resource>/[<namespace>/]<name>")
	}
	for _, p := range parts {
		if p == "" {
			return Path{}, fmt.Errorf("not the path of an object: an empty path component")
		}
	}
	group := parts[0]
	if group == "core" {
		group = ""
	}
	p := Path{GroupResource: schema.GroupResource{Group: group, Resource: parts[1]}, Name: parts[len(parts)-1]}
	if len(parts) == 4 {
		p.Namespace = parts[2]
	}
	return p, nil
}

// groupDir is the first path component of a group's objects.
func groupDir(group string) string {
	if group == "" {
		return "core"
	}
	return group
}

// objectHead is what every object says about itself.
type objectHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// CustomTypes looks up the type of a resource that is not built in: the
// pre-receive hook reads it from the CRDs of the pushed tree.
type CustomTypes func(schema.GroupResource) (Type, bool)

// Read turns the content of the file of key (with extension ext: ".json",
// ".yaml", anything else is refused) into the object it holds as JSON, or
// says why it can't be served. It has the signature of
// gitstore.Options.ReadFile and is a pure function, as that requires.
func (r *Reader) Read(key string, content []byte, ext string) ([]byte, error) {
	return r.ReadWith(key, content, ext, nil)
}

// ReadWith is Read with custom resources checked against custom.
func (r *Reader) ReadWith(key string, content []byte, ext string, custom CustomTypes) ([]byte, error) {
	path, err := ParseKey(key)
	if err != nil {
		return nil, err
	}
	if max := r.maxBytes(); len(content) > max {
		return nil, fmt.Errorf("the file is %d bytes, more than the %d bytes an object may have", len(content), max)
	}
	data, err := toJSON(content, ext)
	if err != nil {
		return nil, err
	}
	if err := r.check(path, data, custom); err != nil {
		return nil, err
	}
	return data, nil
}

func (r *Reader) maxBytes() int {
	if r.MaxBytes > 0 {
		return r.MaxBytes
	}
	return DefaultMaxBytes
}

// toJSON returns a JSON or YAML file's object as compact JSON, with the
// trailing newline the API server writes.
func toJSON(content []byte, ext string) ([]byte, error) {
	var data []byte
	switch ext {
	case ".json":
		var out bytes.Buffer
		if err := json.Compact(&out, content); err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		data = out.Bytes()
	case ".yaml":
		js, err := yaml.YAMLToJSON(content)
		if err != nil {
			return nil, fmt.Errorf("not valid YAML: %w", err)
		}
		data = js
	default:
		return nil, fmt.Errorf("objects are .json or .yaml files, not %q", ext)
	}
	if len(data) == 0 || data[0] != '{' {
		return nil, errors.New("the file holds no object (a JSON or YAML mapping)")
	}
	return append(data, '\n'), nil
}

// check compares what the object says about itself with its path.
func (r *Reader) check(path Path, data []byte, custom CustomTypes) error {
	var head objectHead
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("not an object: %w", err)
	}
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	switch {
	case head.APIVersion == "" || head.Kind == "":
		return errors.New("apiVersion and kind must be set")
	case err != nil:
		return fmt.Errorf("apiVersion %q: %w", head.APIVersion, err)
	case gv.Group != path.Group:
		return fmt.Errorf("apiVersion %s is not of group %q, the group of %s/", head.APIVersion, path.Group, groupDir(path.Group))
	case head.Metadata.Name != path.Name:
		return fmt.Errorf("metadata.name %q is not %q, the name in the path", head.Metadata.Name, path.Name)
	}
	t, known := r.Types[path.GroupResource]
	if !known && custom != nil {
		t, known = custom(path.GroupResource)
	}
	namespaced := path.Namespace != ""
	if known {
		if head.Kind != t.Kind {
			return fmt.Errorf("kind %s does not belong in %s/%s/ (%s objects do)", head.Kind, groupDir(path.Group), path.Resource, t.Kind)
		}
		if t.Namespaced != namespaced {
			if t.Namespaced {
				return fmt.Errorf("%s are namespaced: their files live at %s/%s/<namespace>/<name>", path.Resource, groupDir(path.Group), path.Resource)
			}
			return fmt.Errorf("%s are not namespaced: their files live at %s/%s/<name>", path.Resource, groupDir(path.Group), path.Resource)
		}
	}
	if head.Metadata.Namespace != path.Namespace {
		if namespaced {
			return fmt.Errorf("metadata.namespace %q is not %q, the namespace in the path", head.Metadata.Namespace, path.Namespace)
		}
		return fmt.Errorf("metadata.namespace %q is set, but the path has no namespace", head.Metadata.Namespace)
	}
	if known && t.Decode != nil {
		if err := t.Decode(data); err != nil {
			return fmt.Errorf("not a valid %s: %w", t.Kind, err)
		}
	}
	return nil
}
