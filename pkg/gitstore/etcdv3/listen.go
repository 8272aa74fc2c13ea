package etcdv3

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
)

// Listen opens a listener for a client URL:
//
//	http://HOST:PORT          TCP (PORT 0 picks a free port)
//	unix:///ABSOLUTE/PATH     unix socket
//	unix://RELATIVE/PATH      unix socket, relative to the working directory
//
// A stale socket file left by an earlier run is removed. TLS (https://) is
// not supported yet.
func Listen(rawURL string) (net.Listener, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("client URL %q: %w", rawURL, err)
	}
	switch u.Scheme {
	case "http":
		if u.Port() == "" {
			return nil, fmt.Errorf("client URL %q has no port", rawURL)
		}
		if u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("client URL %q has a path; the etcd API is served at the root", rawURL)
		}
		return net.Listen("tcp", u.Host)
	case "unix":
		path := u.Host + u.Path
		if u.Opaque != "" {
			path = u.Opaque
		}
		if path == "" {
			return nil, fmt.Errorf("client URL %q names no socket path", rawURL)
		}
		if err := removeStaleSocket(path); err != nil {
			return nil, err
		}
		return net.Listen("unix", path)
	case "https", "unixs":
		return nil, fmt.Errorf("client URL %q: TLS is not supported yet; use http:// or unix://", rawURL)
	default:
		return nil, fmt.Errorf("client URL %q: scheme must be http or unix", rawURL)
	}
}

func removeStaleSocket(path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("%s: another server is listening on this socket", path)
	}
	return os.Remove(path)
}

// ListenerURL is the client URL of a listener from Listen, as etcd clients
// (clientv3, etcdctl --endpoints, kube-apiserver --etcd-servers) take it.
func ListenerURL(l net.Listener) string {
	addr := l.Addr()
	if addr.Network() == "unix" {
		path := addr.String()
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return "unix://" + path
	}
	return "http://" + addr.String()
}
