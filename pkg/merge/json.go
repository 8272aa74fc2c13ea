package merge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// kind is the type of a node: a JSON type, or opaque for a value that is
// not JSON and is only ever compared as bytes.
type kind uint8

const (
	kindOpaque kind = iota
	kindNull
	kindBool
	kindNumber
	kindString
	kindObject
	kindArray
)

// node is a parsed value that remembers its bytes, so that whatever the merge
// leaves alone is written back exactly as it was read.
type node struct {
	kind    kind
	raw     []byte   // compact bytes as read; nil for containers the merge built
	text    string   // decoded string, number text, "true"/"false", opaque bytes
	members []member // object members, in order
	items   []*node  // array items, in order

	index map[string]int // members by key, built on first lookup of a large object
}

type member struct {
	key    string
	rawKey []byte // the key as written, quotes included
	val    *node
}

// parseValue parses a stored value. Anything that is not JSON, or whose
// meaning JSON leaves open (an object with a duplicate key), becomes an
// opaque node.
func parseValue(b []byte) *node {
	if json.Valid(b) {
		var c bytes.Buffer
		c.Grow(len(b))
		if json.Compact(&c, b) == nil {
			p := parser{b: c.Bytes()}
			if n, err := p.value(); err == nil {
				return n
			}
		}
	}
	if b == nil {
		b = []byte{} // raw nil marks a built container
	}
	return &node{kind: kindOpaque, raw: b, text: string(b)}
}

var errDuplicateKey = errors.New("duplicate object key")

// parser reads compact JSON that json.Valid has accepted, so it only needs
// to find where each value ends.
type parser struct {
	b []byte
	i int
}

func (p *parser) value() (*node, error) {
	start := p.i
	switch c := p.b[p.i]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		raw := p.str()
		return &node{kind: kindString, raw: raw, text: decodeString(raw)}, nil
	case 't':
		p.i += len("true")
		return &node{kind: kindBool, raw: p.b[start:p.i], text: "true"}, nil
	case 'f':
		p.i += len("false")
		return &node{kind: kindBool, raw: p.b[start:p.i], text: "false"}, nil
	case 'n':
		p.i += len("null")
		return &node{kind: kindNull, raw: p.b[start:p.i]}, nil
	default:
		for p.i < len(p.b) && strings.IndexByte("+-0123456789.eE", p.b[p.i]) >= 0 {
			p.i++
		}
		raw := p.b[start:p.i]
		return &node{kind: kindNumber, raw: raw, text: string(raw)}, nil
	}
}

func (p *parser) object() (*node, error) {
	start := p.i
	p.i++ // '{'
	n := &node{kind: kindObject}
	seen := map[string]bool{}
	for p.b[p.i] != '}' {
		rawKey := p.str()
		key := decodeString(rawKey)
		if seen[key] {
			return nil, errDuplicateKey
		}
		seen[key] = true
		p.i++ // ':'
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{key: key, rawKey: rawKey, val: v})
		if p.b[p.i] == ',' {
			p.i++
		}
	}
	p.i++ // '}'
	n.raw = p.b[start:p.i]
	return n, nil
}

func (p *parser) array() (*node, error) {
	start := p.i
	p.i++ // '['
	n := &node{kind: kindArray}
	for p.b[p.i] != ']' {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, v)
		if p.b[p.i] == ',' {
			p.i++
		}
	}
	p.i++ // ']'
	n.raw = p.b[start:p.i]
	return n, nil
}

// str returns the string literal at p.i, quotes included.
func (p *parser) str() []byte {
	start := p.i
	p.i++
	for p.b[p.i] != '"' {
		if p.b[p.i] == '\\' {
			p.i++
		}
		p.i++
	}
	p.i++
	return p.b[start:p.i]
}

func decodeString(raw []byte) string {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var s string
	_ = json.Unmarshal(raw, &s) // valid: the parser only sees valid JSON
	return s
}

// get returns the member value for key, nil if there is none.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	if len(n.members) <= 8 {
		for _, m := range n.members {
			if m.key == key {
				return m.val
			}
		}
		return nil
	}
	if n.index == nil {
		n.index = make(map[string]int, len(n.members))
		for i, m := range n.members {
			n.index[m.key] = i
		}
	}
	if i, ok := n.index[key]; ok {
		return n.members[i].val
	}
	return nil
}

// equal says whether two values mean the same: object members in any order,
// strings by their decoded text, numbers by their text. nil is absent.
func equal(a, b *node) bool {
	switch {
	case a == b:
		return true
	case a == nil || b == nil || a.kind != b.kind:
		return false
	}
	switch a.kind {
	case kindObject:
		if len(a.members) != len(b.members) {
			return false
		}
		for _, m := range a.members {
			if !equal(m.val, b.get(m.key)) {
				return false
			}
		}
		return true
	case kindArray:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !equal(a.items[i], b.items[i]) {
				return false
			}
		}
		return true
	}
	return a.text == b.text
}

// appendValue appends the bytes of n: as read where the merge left it alone,
// compact JSON where the merge built it.
func appendValue(buf []byte, n *node) []byte {
	if n.raw != nil {
		return append(buf, n.raw...)
	}
	switch n.kind {
	case kindObject:
		buf = append(buf, '{')
		for i, m := range n.members {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, m.rawKey...)
			buf = append(buf, ':')
			buf = appendValue(buf, m.val)
		}
		return append(buf, '}')
	case kindArray:
		buf = append(buf, '[')
		for i, it := range n.items {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendValue(buf, it)
		}
		return append(buf, ']')
	}
	return buf // only containers are built, every other node has raw
}

// bytesOf is the value's bytes for a conflict report, nil when absent.
func bytesOf(n *node) []byte {
	if n == nil {
		return nil
	}
	return appendValue(nil, n)
}
