package intern

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apiserver/pkg/server/mux"
)

// droppedStack stands for a registration's stack trace in a mux whose
// stacks were dropped.
const droppedStack = "(not kept: heaven-server drops the stacks of registrations once its API server is built)"

// DropPathStacks makes m forget the stack trace it keeps of each path's
// registration (a few KiB each, 0.16 MiB per generic heaven), kept only to
// name the first registration when a path is registered twice. A later
// duplicate is still reported, without the first one's stack.
func DropPathStacks(m *mux.PathRecorderMux) error {
	v := reflect.ValueOf(m).Elem()
	lock, err := field(v, "lock")
	if err != nil {
		return err
	}
	mu, ok := lock.Addr().Interface().(*sync.Mutex)
	if !ok {
		return fmt.Errorf("mux.PathRecorderMux.lock is a %s, not a sync.Mutex", lock.Type())
	}
	stacks, err := field(v, "pathStacks")
	if err != nil {
		return err
	}
	m2, ok := stacks.Addr().Interface().(*map[string]string)
	if !ok {
		return fmt.Errorf("mux.PathRecorderMux.pathStacks is a %s, not a map[string]string", stacks.Type())
	}
	mu.Lock()
	defer mu.Unlock()
	for path := range *m2 {
		(*m2)[path] = droppedStack
	}
	return nil
}
