package memnet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"k8s.io/klog/v2"
)

// Transport is an http.RoundTripper that serves each request with Handler,
// in this process: no connection, no framing, no flow control. A request
// costs the goroutine that runs the handler and a pipe for the response
// body. heaven-server's own clients reach heavens this way: every running
// heaven has about ten watches open on itself (its informers), and over a
// connection (HTTP/2 without TLS) each watch also took a stream with its
// buffers, a goroutine of the client's and the connection's own.
//
// What the handler writes reaches the client when the client reads it (the
// pipe holds nothing): a response nobody reads holds its handler, as a
// full connection would; closing the body or ending the request's context
// ends it.
type Transport struct {
	// Handler serves the requests. It gets a copy of the request whose
	// context also ends when the response body is closed.
	Handler http.Handler
}

// RoundTrip serves req with t.Handler and returns once the handler has
// written the response's header (or returned), with a body that streams
// what it writes next.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := req.Clone(ctx)
	r.RequestURI = req.URL.RequestURI()
	// As a server parses it: the path and query, no scheme or host.
	r.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	r.Host = req.Host
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	r.RemoteAddr = Addr{}.String()
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if r.ContentLength == 0 && r.Body != http.NoBody {
		r.ContentLength = -1
	}

	pr, pw := io.Pipe()
	w := &responseWriter{header: http.Header{}, body: pw, sent: make(chan struct{}), ctx: ctx}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				// What net/http's server does with the connection: the
				// client sees the response cut short.
				err := fmt.Errorf("memnet: handler of %s %s panicked: %v", req.Method, req.URL.Path, p)
				if p != http.ErrAbortHandler {
					klog.ErrorS(err, "In-process request")
				}
				w.fail(err)
				pw.CloseWithError(err)
				return
			}
			w.WriteHeader(http.StatusOK) // if the handler wrote nothing
			pw.Close()
		}()
		defer r.Body.Close()
		t.Handler.ServeHTTP(w, r)
	}()

	select {
	case <-w.sent:
	case <-req.Context().Done():
		cancel()
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	if w.err != nil {
		cancel()
		return nil, w.err
	}
	resp := &http.Response{
		Status:        strconv.Itoa(w.code) + " " + http.StatusText(w.code),
		StatusCode:    w.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sentHeader,
		Body:          &body{PipeReader: pr, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}
	if n, err := strconv.ParseInt(w.sentHeader.Get("Content-Length"), 10, 64); err == nil {
		resp.ContentLength = n
	}
	if req.Method == http.MethodHead {
		resp.Body = http.NoBody
		pr.Close()
		cancel()
	}
	return resp, nil
}

// body is a response body; closing it ends the request.
type body struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *body) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}

// responseWriter is the handler's side of a response: the header is taken
// at the first write, the body goes into the pipe.
type responseWriter struct {
	header http.Header
	body   *io.PipeWriter
	ctx    context.Context // the request's

	once       sync.Once
	sent       chan struct{} // closed when the header is taken (or err set)
	code       int
	sentHeader http.Header
	err        error // the handler failed before it wrote a header
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		return // informational: nothing for a client of this transport
	}
	w.once.Do(func() {
		w.code, w.sentHeader = code, w.header.Clone()
		close(w.sent)
	})
}

// fail ends a response that has no header yet with err.
func (w *responseWriter) fail(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.sent)
	})
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.header.Get("Content-Type") == "" && !w.headerSent() {
		w.header.Set("Content-Type", http.DetectContentType(p)) // as net/http does
	}
	w.WriteHeader(http.StatusOK)
	if w.err != nil {
		return 0, w.err
	}
	return w.body.Write(p) // io.ErrClosedPipe once the client has gone
}

func (w *responseWriter) headerSent() bool {
	select {
	case <-w.sent:
		return true
	default:
		return false
	}
}

// Flush sends the header; what was written has already reached the pipe.
func (w *responseWriter) Flush() { w.WriteHeader(http.StatusOK) }

// CloseNotify tells when the client has gone. k8s.io/apiserver's filters
// pass Flush on only to a writer that has it too (as net/http's have).
//
//nolint:staticcheck // http.CloseNotifier is deprecated, not gone.
func (w *responseWriter) CloseNotify() <-chan bool {
	gone := make(chan bool, 1)
	context.AfterFunc(w.ctx, func() { gone <- true })
	return gone
}
