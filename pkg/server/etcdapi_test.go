package server

import (
	"strings"
	"testing"
)

func TestEtcdAPIOptions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(*Options)
		wantErr   string // "" for none
	}{
		{name: "off by default", configure: func(*Options) {}},
		{name: "loopback", configure: func(o *Options) {
			o.EtcdAPIURLs = []string{"http://127.0.0.1:0", "http://[::1]:2379", "http://localhost:2379"}
		}},
		{name: "unix socket", configure: func(o *Options) { o.EtcdAPIURLs = []string{"unix:///run/heaven/etcd.sock"} }},
		{name: "every interface", configure: func(o *Options) { o.EtcdAPIURLs = []string{"http://0.0.0.0:2379"} }, wantErr: "loopback"},
		{name: "another host", configure: func(o *Options) { o.EtcdAPIURLs = []string{"http://10.0.0.1:2379"} }, wantErr: "loopback"},
		{name: "no port", configure: func(o *Options) { o.EtcdAPIURLs = []string{"http://127.0.0.1"} }, wantErr: "no port"},
		{name: "TLS", configure: func(o *Options) { o.EtcdAPIURLs = []string{"https://127.0.0.1:2379"} }, wantErr: "scheme"},
		{name: "unknown layout", configure: func(o *Options) { o.EtcdAPILayout = "etcd" }, wantErr: "--etcd-api-layout"},
		{name: "without git", configure: func(o *Options) {
			o.EtcdAPIURLs, o.Storage = []string{"http://127.0.0.1:0"}, StorageEtcd
		}, wantErr: "--storage=git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.configure(o)
			var msgs []string
			for _, err := range o.Validate() {
				msgs = append(msgs, err.Error())
			}
			got := strings.Join(msgs, "; ")
			switch {
			case tc.wantErr == "" && got != "":
				t.Errorf("Validate: %s", got)
			case tc.wantErr != "" && !strings.Contains(got, tc.wantErr):
				t.Errorf("Validate: %q, want an error with %q", got, tc.wantErr)
			}
		})
	}
}
