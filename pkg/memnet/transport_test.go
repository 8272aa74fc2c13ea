package memnet

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTransportServesRequests(t *testing.T) {
	for _, tc := range []struct {
		name       string
		method     string
		body       string
		handler    http.HandlerFunc
		wantCode   int
		wantBody   string
		wantHeader map[string]string
		wantLength int64
	}{{
		name: "a GET", method: http.MethodGet,
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "13")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"path":"/x"}`)
		},
		wantCode: http.StatusCreated, wantBody: `{"path":"/x"}`,
		wantHeader: map[string]string{"Content-Type": "application/json"}, wantLength: 13,
	}, {
		name: "a POST's body reaches the handler", method: http.MethodPost, body: "hello",
		handler: func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			io.WriteString(w, strings.ToUpper(string(b))+" "+r.RequestURI+" "+r.URL.String())
		},
		wantCode: http.StatusOK, wantBody: "HELLO /x?y=1 /x?y=1",
		wantHeader: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, wantLength: -1,
	}, {
		name: "a handler that writes nothing", method: http.MethodDelete,
		handler:  func(w http.ResponseWriter, r *http.Request) {},
		wantCode: http.StatusOK, wantBody: "", wantLength: -1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &http.Client{Transport: &Transport{Handler: tc.handler}}
			req, err := http.NewRequest(tc.method, "http://heaven-loopback/x?y=1", strings.NewReader(tc.body))
			require.NoError(t, err)
			if tc.body == "" {
				req.Body = nil
			}
			resp, err := c.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.wantCode, resp.StatusCode)
			assert.Equal(t, tc.wantBody, string(b))
			assert.Equal(t, tc.wantLength, resp.ContentLength)
			for k, v := range tc.wantHeader {
				assert.Equal(t, v, resp.Header.Get(k), k)
			}
		})
	}
}

// A watch: what the handler flushes reaches the client at once, and closing
// the body ends the handler's request.
func TestTransportStreamsUntilTheBodyIsClosed(t *testing.T) {
	next := make(chan struct{})
	ended := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for i := 0; ; i++ {
			io.WriteString(w, "event\n")
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				ended <- r.Context().Err()
				return
			}
		}
	})
	resp, err := (&http.Client{Transport: &Transport{Handler: h}}).Get("http://heaven-loopback/watch")
	require.NoError(t, err)
	lines := bufio.NewReader(resp.Body)
	for range 3 {
		line, err := lines.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "event\n", line)
		next <- struct{}{}
	}
	require.NoError(t, resp.Body.Close())
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler went on after the body was closed")
	}
}

func TestTransportGivesUpWithTheRequestsContext(t *testing.T) {
	ended := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
		close(ended)
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://heaven-loopback/slow", nil)
	require.NoError(t, err)
	errs := make(chan error, 1)
	go func() {
		_, err := (&Transport{Handler: h}).RoundTrip(req)
		errs <- err
	}()
	cancel()
	select {
	case err := <-errs:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("RoundTrip did not return after its context ended")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's request did not end with the client's")
	}
}

func TestTransportPanickingHandler(t *testing.T) {
	t.Run("before the header", func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) })
		_, err := (&http.Client{Transport: &Transport{Handler: h}}).Get("http://heaven-loopback/")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "panicked")
	})
	t.Run("after the header", func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "part")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		})
		resp, err := (&http.Client{Transport: &Transport{Handler: h}}).Get("http://heaven-loopback/")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		assert.Equal(t, "part", string(b))
		require.Error(t, err, "a response cut short must not read as complete")
	})
}

// k8s.io/apiserver's filters keep Flush only for a writer that is also an
// http.CloseNotifier, as net/http's writers are.
func TestTransportWriterIsAFlushingCloseNotifier(t *testing.T) {
	got := make(chan bool, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, flusher := w.(http.Flusher)
		cn, notifier := w.(http.CloseNotifier) //nolint:staticcheck // what the filters look for
		got <- flusher && notifier
		w.WriteHeader(http.StatusOK)
		if notifier {
			<-cn.CloseNotify()
		}
	})
	resp, err := (&http.Client{Transport: &Transport{Handler: h}}).Get("http://heaven-loopback/watch")
	require.NoError(t, err)
	assert.True(t, <-got, "the writer is not an http.Flusher and an http.CloseNotifier")
	require.NoError(t, resp.Body.Close()) // the handler returns once told
}
