package etcdv3

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// PrefixPair names one part of the keyspace on both sides: the client's key
// Client+rest is the store's key Store+rest.
type PrefixPair struct {
	Client, Store string
}

// KeyMap renames keys between a client's keyspace and a branch's, for
// clients that keep the same objects under other keys: a stock
// kube-apiserver keeps Services at /registry/services/specs/<ns>/<name>,
// heavens at /core/services/<ns>/<name>. The longest matching prefix wins on
// either side; a key no prefix matches is the same on both.
//
// Only keys that map back to themselves are accepted: a client key that
// lands under another pair's store prefix (with the pairs of
// kube-apiserver's layout: /registry/core/pods/x, which would be
// /core/pods/x, the store's name of /registry/pods/x) is refused with
// InvalidArgument, and so is a range whose keys would come back in another
// order, or under other pairs (a range over several resources).
type KeyMap struct {
	pairs []PrefixPair // longest Client first
	store []PrefixPair // longest Store first
}

// NewKeyMap checks pairs: no two with the same client or store prefix.
func NewKeyMap(pairs []PrefixPair) (*KeyMap, error) {
	clients, stores := map[string]bool{}, map[string]bool{}
	for _, p := range pairs {
		if p.Client == "" || p.Store == "" {
			return nil, fmt.Errorf("etcdv3: key map pair %+v has an empty prefix", p)
		}
		if clients[p.Client] || stores[p.Store] {
			return nil, fmt.Errorf("etcdv3: key map pair %+v: its client or store prefix is another pair's too", p)
		}
		clients[p.Client], stores[p.Store] = true, true
	}
	m := &KeyMap{pairs: slices.Clone(pairs), store: slices.Clone(pairs)}
	slices.SortFunc(m.pairs, func(a, b PrefixPair) int { return len(b.Client) - len(a.Client) })
	slices.SortFunc(m.store, func(a, b PrefixPair) int { return len(b.Store) - len(a.Store) })
	return m, nil
}

// clientPair is the pair whose client prefix is the longest to start key.
func (m *KeyMap) clientPair(key []byte) (PrefixPair, bool) {
	for _, p := range m.pairs {
		if bytes.HasPrefix(key, []byte(p.Client)) {
			return p, true
		}
	}
	return PrefixPair{}, false
}

// storePair is the pair whose store prefix is the longest to start key.
func (m *KeyMap) storePair(key []byte) (PrefixPair, bool) {
	for _, p := range m.store {
		if bytes.HasPrefix(key, []byte(p.Store)) {
			return p, true
		}
	}
	return PrefixPair{}, false
}

// StoreKey returns the store's name of a client key.
func (m *KeyMap) StoreKey(key []byte) ([]byte, error) {
	s, _, err := m.storeKey(key)
	return s, err
}

func (m *KeyMap) storeKey(key []byte) ([]byte, *PrefixPair, error) {
	p, ok := m.clientPair(key)
	s := key
	if ok {
		s = append([]byte(p.Store), key[len(p.Client):]...)
	}
	back, backOK := m.storePair(s)
	if ok != backOK || back != p {
		return nil, nil, fmt.Errorf("key %q can't be named here: it would be the store's %q, which clients name %q", key, s, m.ClientKey(s))
	}
	if !ok {
		return s, nil, nil
	}
	return s, &p, nil
}

// ClientKey returns the client's name of a store key.
func (m *KeyMap) ClientKey(key []byte) []byte {
	p, ok := m.storePair(key)
	if !ok {
		return key
	}
	out := make([]byte, 0, len(p.Client)+len(key)-len(p.Store))
	return append(append(out, p.Client...), key[len(p.Store):]...)
}

// StoreRange returns the store's range of the client's [key, end): end
// empty (one key), "\x00" (every key from key on: clamped to key's pair), a
// key of the same pair, or the end of one of its prefixes.
func (m *KeyMap) StoreRange(key, end []byte) ([]byte, []byte, error) {
	s, p, err := m.storeKey(key)
	if err != nil || len(end) == 0 {
		return s, end, err
	}
	var e []byte
	switch {
	case isInfinite(end):
		e = end
		if p != nil {
			end, e = prefixEnd([]byte(p.Client)), prefixEnd([]byte(p.Store))
		}
	case bytes.Compare(end, key) <= 0:
		return s, s, nil // empty, as in etcd
	default:
		if e, err = m.storeEnd(end, p); err != nil {
			return nil, nil, fmt.Errorf("range [%q, %q): %w", key, end, err)
		}
	}
	// Neither range may reach into another pair's keys: they would be
	// elsewhere on the other side, and in another order.
	q, ok := m.crossed(key, end, p, func(q PrefixPair) string { return q.Client })
	if !ok {
		q, ok = m.crossed(s, e, p, func(q PrefixPair) string { return q.Store })
	}
	if ok {
		return nil, nil, fmt.Errorf("range [%q, %q) holds keys of %q as well as %s: here a range stays inside one prefix", key, end, q.Client, prefixOf(p))
	}
	return s, e, nil
}

// storeEnd maps a range's end: a key of pair p, or the end of a prefix
// that p maps (the end of /registry/pods/ is /registry/pods0).
func (m *KeyMap) storeEnd(end []byte, p *PrefixPair) ([]byte, error) {
	if p != nil {
		if bytes.HasPrefix(end, []byte(p.Client)) {
			return append([]byte(p.Store), end[len(p.Client):]...), nil
		}
		if last := len(end) - 1; end[last] > 0 {
			// end is the end of prefix dir, if dir ends in "/".
			dir := append(bytes.Clone(end[:last]), end[last]-1)
			if bytes.HasSuffix(dir, []byte("/")) && bytes.HasPrefix(dir, []byte(p.Client)) {
				return prefixEnd(append([]byte(p.Store), dir[len(p.Client):]...)), nil
			}
			if bytes.Equal(prefixEnd([]byte(p.Client)), end) {
				return prefixEnd([]byte(p.Store)), nil
			}
		}
		return nil, fmt.Errorf("it ends outside %q", p.Client)
	}
	if q, ok := m.clientPair(end); ok {
		return nil, fmt.Errorf("it ends inside %q", q.Client)
	}
	return end, nil
}

// crossed reports a pair, other than p and those holding it, into whose
// prefix (on the side side picks) [s, e) reaches.
func (m *KeyMap) crossed(s, e []byte, p *PrefixPair, side func(PrefixPair) string) (PrefixPair, bool) {
	for _, q := range m.pairs {
		if p != nil && (q == *p || strings.HasPrefix(side(*p), side(q))) {
			continue
		}
		lo := []byte(side(q))
		if bytes.Compare(s, prefixEnd(lo)) < 0 && (isInfinite(e) || bytes.Compare(lo, e) < 0) {
			return q, true
		}
	}
	return PrefixPair{}, false
}

func isInfinite(end []byte) bool { return len(end) == 1 && end[0] == 0 }

func prefixOf(p *PrefixPair) string {
	if p == nil {
		return "keys outside every prefix"
	}
	return fmt.Sprintf("%q", p.Client)
}
