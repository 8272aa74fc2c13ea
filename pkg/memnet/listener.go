// Package memnet is HTTP inside heaven-server, with no socket, no TLS and no
// credentials. Transport serves heaven-server's own requests to heavens
// (their controllers', admission's) with the front, in process. Listener is
// a net.Listener whose connections are net.Pipes made by DialContext: a
// heaven's generic API server, which needs a listener to run and shut down
// in order but is reached only through the front, gets one that nobody
// dials.
package memnet

import (
	"context"
	"net"
	"sync"
)

// Listener is an in-process net.Listener.
type Listener struct {
	addr      net.Addr
	conns     chan net.Conn
	closeOnce sync.Once
	closed    chan struct{}
}

// NewListener returns a listener that reports addr as its address (nil:
// an address of network "memory").
func NewListener(addr net.Addr) *Listener {
	if addr == nil {
		addr = Addr{}
	}
	return &Listener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for DialContext or Close.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and DialContext fail from now on.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *Listener) Addr() net.Addr { return l.addr }

// DialContext connects to the listener; its signature is
// http.Transport.DialContext's.
func (l *Listener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Addr is the address of a listener made without one.
type Addr struct{}

func (Addr) Network() string { return "memory" }
func (Addr) String() string  { return "heaven-loopback" }
