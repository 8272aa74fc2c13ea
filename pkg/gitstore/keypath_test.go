package gitstore

import (
	"bytes"
	"strings"
	"testing"
)

func TestKeyPathRoundTrip(t *testing.T) {
	tests := []struct{ key, path string }{
		{"/registry/configmaps/default/web", "registry/configmaps/default/web"},
		{"/core/configmaps/ns/a.b-c", "core/configmaps/ns/a.b-c"},
		{"compact_rev_key", "%%/compact_rev_key"},
		{"/a//b", "a/%/b"},
		{"/", "%"},
		{"/.git/x", "%2Egit/x"},
		{"/../x", "%2E./x"},
		{"/a b/%c", "a%20b/%25c"},
		{"/dir.json/x", "dir%2Ejson/x"},
		{"/file.json", "file.json"},
		{"/\x00\xff", "%00%FF"},
	}
	for _, tt := range tests {
		got := KeyPath(tt.key)
		if got != tt.path {
			t.Errorf("KeyPath(%q) = %q, want %q", tt.key, got, tt.path)
		}
		back, err := PathKey(got)
		if err != nil || back != tt.key {
			t.Errorf("PathKey(%q) = %q, %v; want %q", got, back, err, tt.key)
		}
	}
}

func TestKeyPathNoFileDirCollision(t *testing.T) {
	// "/a/b" is file a/b.json; "/a/b.json/c" must not need a directory a/b.json.
	file := KeyPath("/a/b") + extJSON
	dir := KeyPath("/a/b.json/c")
	if bytes.HasPrefix([]byte(dir), []byte(file+"/")) {
		t.Fatalf("directory %q collides with file %q", dir, file)
	}
}

func TestPathKeyRejectsBadEscapes(t *testing.T) {
	for _, p := range []string{"a/%", "a/%2", "a/%zz"} {
		if p == "a/%" {
			continue // "%" is the empty component
		}
		if _, err := PathKey(p); err == nil {
			t.Errorf("PathKey(%q) succeeded, want error", p)
		}
	}
}

func TestEncodeValueRoundTrip(t *testing.T) {
	tests := []struct {
		name, value, ext string
	}{
		{"apiserver json", `{"kind":"ConfigMap","data":{"a":"b"}}` + "\n", extJSON},
		{"compact json", `{"a":[1,2,{"b":null}]}`, extJSON},
		{"json with spaces stays verbatim", `{"a": 1}`, extYAML},
		{"yaml", "apiVersion: v1\nkind: ConfigMap\n", extYAML},
		{"plain", "hello", extRaw},
		{"empty", "", extRaw},
		{"binary", "k8s\x00\x01\x02", extRaw},
		{"escaped strings", `{"a":"\u003c\n\"x"}`, extJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content, ext := EncodeValue([]byte(tt.value))
			if ext != tt.ext {
				t.Fatalf("ext = %q, want %q", ext, tt.ext)
			}
			back, err := DecodeValue(content, ext)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, []byte(tt.value)) {
				t.Fatalf("round trip: got %q, want %q", back, tt.value)
			}
			if ext == extJSON && bytes.Count(content, []byte("\n")) < 2 && len(tt.value) > 20 {
				t.Fatalf("JSON not one field per line: %q", content)
			}
		})
	}
}

func FuzzEncodeValue(f *testing.F) {
	f.Add([]byte(`{"a":1}`))
	f.Add([]byte("a: b\n"))
	f.Fuzz(func(t *testing.T, v []byte) {
		content, ext := EncodeValue(v)
		back, err := DecodeValue(content, ext)
		if err != nil || !bytes.Equal(back, v) {
			t.Fatalf("round trip of %q via %s: %q, %v", v, ext, back, err)
		}
	})
}

func FuzzKeyPath(f *testing.F) {
	f.Add("/registry/a/b")
	f.Add("x//y/.json")
	f.Add("/core/configmaps/default/" + strings.Repeat("a", 253))
	f.Add("/" + strings.Repeat("%", 300))
	f.Add("/" + strings.Repeat("ab", 119) + "/x")
	f.Fuzz(func(t *testing.T, key string) {
		path := KeyPath(key)
		back, err := PathKey(path)
		if err != nil || back != key {
			t.Fatalf("round trip of %q: %q, %v", key, back, err)
		}
		for _, c := range strings.Split(path, "/") {
			if len(c)+len(extJSON) > 255 {
				t.Fatalf("KeyPath(%q) has a component of %d bytes with its extension", key, len(c)+len(extJSON))
			}
		}
	})
}

func TestKeyPathOfLongNames(t *testing.T) {
	name := strings.Repeat("a", 253) // the longest Kubernetes name
	path := KeyPath("/core/configmaps/default/" + name)
	if want := "core/configmaps/default/" + name[:240] + "%~/" + name[240:]; path != want {
		t.Fatalf("KeyPath = %q, want %q", path, want)
	}
	// A split never cuts an escape in two.
	key := "/" + strings.Repeat("a", 239) + " b"
	path = KeyPath(key)
	if !strings.HasPrefix(path, strings.Repeat("a", 239)+"%~/%20b") {
		t.Fatalf("KeyPath(%q) = %q", key, path)
	}
	if back, err := PathKey(path); err != nil || back != key {
		t.Fatalf("PathKey(%q) = %q, %v", path, back, err)
	}
}

// Names Kubernetes allows (DNS subdomains, up to 253 characters) keep
// their readable form unless they are longer than one path component.
func TestKeyPathKeepsOrdinaryNames(t *testing.T) {
	for _, name := range []string{"web", "a.b-c", "kube-root-ca.crt", strings.Repeat("x", 240)} {
		if got := KeyPath("/core/configmaps/default/" + name); got != "core/configmaps/default/"+name {
			t.Errorf("KeyPath of %q = %q", name, got)
		}
	}
}
