package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFairQueueTakesTurns(t *testing.T) {
	q := newFairQueue(2, 2, 10)
	ctx := context.Background()
	// busy takes both slots and queues three more.
	r1, err := q.acquire(ctx, "busy")
	require.NoError(t, err)
	r2, err := q.acquire(ctx, "busy")
	require.NoError(t, err)
	order := make(chan string, 10)
	wait := func(h string) {
		go func() {
			rel, err := q.acquire(ctx, h)
			if err == nil {
				order <- h
				_ = rel
			}
		}()
	}
	for range 3 {
		wait("busy")
	}
	waitQueued(t, q, "busy", 3)
	wait("quiet")
	waitQueued(t, q, "quiet", 1)
	// The first freed slot goes to busy (first in turn), the second to
	// quiet although busy has two more waiting.
	r1()
	require.Equal(t, "busy", <-order)
	r2()
	require.Equal(t, "quiet", <-order)
}

func TestFairQueueLimitsAHeaven(t *testing.T) {
	q := newFairQueue(4, 1, 1)
	ctx := context.Background()
	_, err := q.acquire(ctx, "a")
	require.NoError(t, err)
	go func() { _, _ = q.acquire(ctx, "a") }() // waits: a is at its share
	waitQueued(t, q, "a", 1)
	_, err = q.acquire(ctx, "a")
	require.ErrorIs(t, err, errTooManyRequests, "a's queue is full")
	rel, err := q.acquire(ctx, "b")
	require.NoError(t, err, "b is not held up by a")
	rel()
}

func TestFairQueueGivesUpWithItsContext(t *testing.T) {
	q := newFairQueue(1, 1, 5)
	rel, err := q.acquire(context.Background(), "a")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = q.acquire(ctx, "b")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	rel()
	// The slot is free again, and nobody waits.
	rel, err = q.acquire(context.Background(), "c")
	require.NoError(t, err)
	rel()
	q.mu.Lock()
	defer q.mu.Unlock()
	require.Equal(t, 1, q.free)
	require.Empty(t, q.waiting)
	require.Empty(t, q.ring)
}

func waitQueued(t *testing.T, q *fairQueue, heaven string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		q.mu.Lock()
		got := len(q.waiting[heaven])
		q.mu.Unlock()
		if got == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d of %s waiting, want %d", got, heaven, n)
		time.Sleep(time.Millisecond)
	}
}
