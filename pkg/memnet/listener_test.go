package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDialReachesAccept(t *testing.T) {
	l := NewListener(nil)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c) // echo
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := l.DialContext(ctx, "tcp", "ignored:1")
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	buf := make([]byte, 4)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, "ping", string(buf))
	require.Equal(t, "memory", l.Addr().Network())
}

func TestCloseEndsAcceptAndDial(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443}
	l := NewListener(addr)
	require.Equal(t, addr, l.Addr())
	accepted := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		accepted <- err
	}()
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "closing twice is harmless")
	select {
	case err := <-accepted:
		require.True(t, errors.Is(err, net.ErrClosed), "Accept after Close: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Accept did not return after Close")
	}
	_, err := l.DialContext(context.Background(), "tcp", "")
	require.ErrorIs(t, err, net.ErrClosed)
}

func TestDialGivesUpWithItsContext(t *testing.T) {
	l := NewListener(nil)
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.DialContext(ctx, "tcp", "")
	require.ErrorIs(t, err, context.Canceled)
}
