package gitstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// File extensions say how a file decodes back to the value that was written.
const (
	extJSON = ".json" // indented JSON; compacts back byte for byte
	extYAML = ".yaml" // verbatim, looks like YAML
	extRaw  = ".raw"  // verbatim, anything else
)

var valueExts = []string{extJSON, extYAML, extRaw}

// Path components that no escaped key component can produce: an escaped
// component never holds a '%' that is not followed by two hex digits.
const (
	emptyComponent = "%"  // "/a//b" → "a/%/b"
	relativeRoot   = "%%" // keys that do not start with '/' live below it
)

// KeyPath maps a key to the stem of its file path (no extension). Keys are
// split at '/', a leading '/' is dropped, and each component is
// percent-escaped so that any key gives a valid, unique git path. An
// escaped component longer than maxComponent is split into directories
// of at most that length, each but the last ending in continuedComponent,
// so that no file or directory name exceeds the 255 bytes file systems
// allow, extension included (a 253-character Kubernetes name with
// ".json" would): git could not check such a branch out.
func KeyPath(key string) string {
	var parts []string
	if strings.HasPrefix(key, "/") {
		key = key[1:]
	} else {
		parts = append(parts, relativeRoot)
	}
	comps := strings.Split(key, "/")
	for i, c := range comps {
		parts = appendSplit(parts, escapeComponent(c, i < len(comps)-1))
	}
	return strings.Join(parts, "/")
}

const (
	// maxComponent bounds a path component, leaving room for the longest
	// extension and the continuation mark below 255 bytes.
	maxComponent = 240
	// continuedComponent ends a component continued in the next one. No
	// escaped component ends so: its '%' is always followed by two hex
	// digits.
	continuedComponent = "%~"
)

// appendSplit appends escaped component e to parts, split into pieces of at
// most maxComponent bytes, never inside a %XX escape.
func appendSplit(parts []string, e string) []string {
	for len(e) > maxComponent {
		cut := maxComponent
		if i := strings.LastIndexByte(e[cut-2:cut], '%'); i >= 0 {
			cut -= 2 - i // keep "%XX" whole
		}
		parts = append(parts, e[:cut]+continuedComponent)
		e = e[cut:]
	}
	return append(parts, e)
}

// PathKey is the inverse of KeyPath.
func PathKey(stem string) (string, error) {
	comps := strings.Split(stem, "/")
	prefix := "/"
	if comps[0] == relativeRoot {
		prefix, comps = "", comps[1:]
	}
	out := make([]string, 0, len(comps))
	var pending strings.Builder // pieces of a split component
	for i, c := range comps {
		if piece, ok := strings.CutSuffix(c, continuedComponent); ok && i < len(comps)-1 && piece != "" {
			pending.WriteString(piece)
			continue
		}
		pending.WriteString(c)
		u, err := unescapeComponent(pending.String())
		if err != nil {
			return "", fmt.Errorf("path %q: %w", stem, err)
		}
		pending.Reset()
		out = append(out, u)
	}
	return prefix + strings.Join(out, "/"), nil
}

func safeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-_.~+=,@:", c) >= 0
}

// escapeComponent percent-escapes one component. A leading '.' is escaped
// (no ".", "..", ".git"), and so is the dot of a directory name ending in one
// of our extensions, so that directory "a.json" never meets file "a.json".
func escapeComponent(c string, dir bool) string {
	if c == "" {
		return emptyComponent
	}
	extDot := -1
	if dir {
		for _, ext := range valueExts {
			if strings.HasSuffix(c, ext) {
				extDot = len(c) - len(ext)
			}
		}
	}
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		ch := c[i]
		if safeByte(ch) && !(ch == '.' && (i == 0 || i == extDot)) {
			b.WriteByte(ch)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", ch)
	}
	return b.String()
}

func unescapeComponent(c string) (string, error) {
	if c == emptyComponent {
		return "", nil
	}
	if !strings.Contains(c, "%") {
		return c, nil
	}
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		if c[i] != '%' {
			b.WriteByte(c[i])
			continue
		}
		if i+2 >= len(c) || unhex(c[i+1]) < 0 || unhex(c[i+2]) < 0 {
			return "", fmt.Errorf("bad escape in %q", c)
		}
		b.WriteByte(byte(unhex(c[i+1])<<4 | unhex(c[i+2])))
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// EncodeValue turns a value into file content and picks the extension.
// JSON that compacts back to exactly value is indented, one field per line;
// a trailing newline of the value is kept as the file's last byte, so that
// the apiserver's "…}\n" comes back unchanged.
func EncodeValue(value []byte) (content []byte, ext string) {
	body, nl := bytes.CutSuffix(value, []byte("\n"))
	if len(body) > 0 && (body[0] == '{' || body[0] == '[') {
		// Compact JSON indents and compacts back to itself: one pass to
		// check (and validate), one to indent.
		var compact bytes.Buffer
		compact.Grow(len(body))
		if json.Compact(&compact, body) == nil && bytes.Equal(compact.Bytes(), body) {
			var ind bytes.Buffer
			ind.Grow(len(body) * 2)
			_ = json.Indent(&ind, body, "", "  ") // valid: Compact accepted it
			if nl {
				ind.WriteByte('\n')
			}
			return ind.Bytes(), extJSON
		}
	}
	if looksLikeYAML(value) {
		return value, extYAML
	}
	return value, extRaw
}

// DecodeValue is the inverse of EncodeValue for a file with extension ext.
func DecodeValue(content []byte, ext string) ([]byte, error) {
	if ext != extJSON {
		return content, nil
	}
	body, nl := bytes.CutSuffix(content, []byte("\n"))
	var out bytes.Buffer
	out.Grow(len(body))
	if err := json.Compact(&out, body); err != nil {
		return nil, fmt.Errorf("decode %s file: %w", extJSON, err)
	}
	if nl {
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// looksLikeYAML: text that parses as a YAML mapping (the shape of an object
// stored with the YAML media type).
func looksLikeYAML(v []byte) bool {
	if len(v) == 0 || !utf8.Valid(v) || bytes.IndexByte(v, ':') < 0 {
		return false
	}
	var m map[string]any
	return yaml.Unmarshal(v, &m) == nil && len(m) > 0
}

// splitExt splits a file name into stem and one of our extensions; ok is
// false for files that are not values (README.md, .gitattributes …).
func splitExt(name string) (stem, ext string, ok bool) {
	for _, e := range valueExts {
		if s, found := strings.CutSuffix(name, e); found && s != "" {
			return s, e, true
		}
	}
	return "", "", false
}
