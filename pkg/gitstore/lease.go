package gitstore

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Lease is a granted lease.
type Lease struct {
	ID  int64
	TTL int64 // seconds
}

// LeaseKey is a key attached to a lease.
type LeaseKey struct {
	Branch string
	Key    []byte
}

// lessor keeps leases in memory: keys written with a lease are ephemeral,
// never committed, and vanish with their lease (or a restart).
type lessor struct {
	mu     sync.Mutex
	leases map[int64]*lease
	lastID int64
}

type lease struct {
	id, ttl int64
	expiry  time.Time
	keys    map[*Branch]map[string]struct{}
}

func newLessor() *lessor {
	// IDs start from the clock so that a restarted store does not hand
	// out the IDs of leases clients may still hold.
	return &lessor{leases: map[int64]*lease{}, lastID: time.Now().UnixNano() & 0x3fffffffffffffff}
}

func (l *lessor) exists(id int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.leases[id]
	return ok
}

func (l *lessor) grant(id, ttl int64) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id == 0 {
		for {
			l.lastID++
			if _, taken := l.leases[l.lastID]; !taken {
				id = l.lastID
				break
			}
		}
	}
	if _, taken := l.leases[id]; taken {
		return Lease{}, ErrLeaseExists
	}
	if ttl < minLeaseTTL {
		ttl = minLeaseTTL
	}
	l.leases[id] = &lease{id: id, ttl: ttl, expiry: time.Now().Add(time.Duration(ttl) * time.Second),
		keys: map[*Branch]map[string]struct{}{}}
	return Lease{ID: id, TTL: ttl}, nil
}

// minLeaseTTL matches etcd's floor for its default election timeout.
const minLeaseTTL = 2

func (l *lessor) keepAlive(id int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.leases[id]
	if !ok {
		return 0, ErrLeaseNotFound
	}
	ls.expiry = time.Now().Add(time.Duration(ls.ttl) * time.Second)
	return ls.ttl, nil
}

// track attaches and detaches keys after a revision became durable.
func (l *lessor) track(b *Branch, changes []change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range changes {
		if c.prev != nil && c.prev.lease != 0 && c.prev.lease != c.rec.lease {
			if ls := l.leases[c.prev.lease]; ls != nil {
				delete(ls.keys[b], c.key)
			}
		}
		if c.rec.lease != 0 {
			if ls := l.leases[c.rec.lease]; ls != nil {
				if ls.keys[b] == nil {
					ls.keys[b] = map[string]struct{}{}
				}
				ls.keys[b][c.key] = struct{}{}
			}
		}
	}
}

// forget drops a closed branch's keys from every lease.
func (l *lessor) forget(b *Branch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ls := range l.leases {
		delete(ls.keys, b)
	}
}

// take removes a lease and returns the branches holding its keys.
func (l *lessor) take(id int64) ([]*Branch, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.leases[id]
	if !ok {
		return nil, ErrLeaseNotFound
	}
	delete(l.leases, id)
	var bs []*Branch
	for b, keys := range ls.keys {
		if len(keys) > 0 {
			bs = append(bs, b)
		}
	}
	return bs, nil
}

func (l *lessor) expired(now time.Time) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []int64
	for id, ls := range l.leases {
		if now.After(ls.expiry) {
			ids = append(ids, id)
		}
	}
	return ids
}

// LeaseGrant grants a lease; id 0 picks one.
func (r *Repository) LeaseGrant(id, ttlSeconds int64) (Lease, error) {
	return r.leases.grant(id, ttlSeconds)
}

// LeaseRevoke revokes a lease and deletes every key attached to it, at one
// revision in each branch holding such keys.
func (r *Repository) LeaseRevoke(ctx context.Context, id int64) error {
	branches, err := r.leases.take(id)
	if err != nil {
		return err
	}
	for _, b := range branches {
		if _, err := b.submit(ctx, &writeRequest{revokeLease: id}); err != nil && err != ErrClosed {
			return err
		}
	}
	return nil
}

// LeaseKeepAlive renews a lease and returns its TTL.
func (r *Repository) LeaseKeepAlive(id int64) (int64, error) { return r.leases.keepAlive(id) }

// LeaseTimeToLive reports a lease's granted and remaining TTL in seconds
// and, when keys is set, its keys.
func (r *Repository) LeaseTimeToLive(id int64, keys bool) (granted, remaining int64, attached []LeaseKey, err error) {
	l := r.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.leases[id]
	if !ok {
		return 0, 0, nil, ErrLeaseNotFound
	}
	remaining = int64(time.Until(ls.expiry).Round(time.Second) / time.Second)
	if remaining < 0 {
		remaining = 0
	}
	if keys {
		for b, ks := range ls.keys {
			for k := range ks {
				attached = append(attached, LeaseKey{Branch: b.name, Key: []byte(k)})
			}
		}
	}
	return ls.ttl, remaining, attached, nil
}

// Leases lists the IDs of live leases.
func (r *Repository) Leases() []int64 {
	l := r.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int64, 0, len(l.leases))
	for id := range l.leases {
		ids = append(ids, id)
	}
	return ids
}

// expireLeases revokes leases whose TTL ran out.
func (r *Repository) expireLeases(ctx context.Context) {
	for _, id := range r.leases.expired(time.Now()) {
		if err := r.LeaseRevoke(ctx, id); err != nil && err != ErrLeaseNotFound {
			klog.FromContext(ctx).Error(err, "Revoking expired lease failed", "lease", id)
		}
	}
}
