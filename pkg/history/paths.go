package history

import (
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// An object's path is its file's path on the branch without the extension:
// <group or core>/<resource>[/<namespace>]/<name> (gitstore.KeyPath of
// its storage key).

// keyPrefix is the storage key prefix of the objects under path prefix p.
func keyPrefix(p string) string {
	if p == "" {
		return ""
	}
	return "/" + strings.TrimPrefix(p, "/")
}

// objectKey is the storage key of the object at path p, which must name an
// object.
func objectKey(p string) (string, error) {
	p = strings.Trim(p, "/")
	if n := strings.Count(p, "/"); n < 2 || n > 3 {
		return "", fmt.Errorf("path %q does not name an object: want <group or core>/<resource>[/<namespace>]/<name>", p)
	}
	return gitstore.PathKey(p)
}

// writeAttributes are the attributes of u doing verb to the object whose
// storage key is key, for the heaven's authorizer.
func writeAttributes(u user.Info, verb, key string) authorizer.AttributesRecord {
	parts := strings.Split(strings.TrimPrefix(key, "/"), "/")
	a := authorizer.AttributesRecord{User: u, Verb: verb, ResourceRequest: true, APIVersion: "*"}
	if len(parts) < 3 {
		return a
	}
	a.APIGroup, a.Resource = parts[0], parts[1]
	if a.APIGroup == "core" {
		a.APIGroup = ""
	}
	if len(parts) == 4 {
		a.Namespace, a.Name = parts[2], parts[3]
	} else {
		a.Name = parts[2]
	}
	return a
}
