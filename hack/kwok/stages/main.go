// Command stages writes kwok's default stages (its "fast" node and pod
// lifecycles and the node heartbeat, as kwokctl configures them) to a kwok
// configuration file: the kwok command reads its stages from one. They
// come from kwok's own module, at the version this module pins.
package main

import (
	"fmt"
	"os"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: stages FILE")
		os.Exit(2)
	}
	docs := []string{nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeat,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete}
	for i, d := range docs {
		docs[i] = strings.TrimSpace(d)
	}
	if err := os.WriteFile(os.Args[1], []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
