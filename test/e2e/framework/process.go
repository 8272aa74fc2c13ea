package framework

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a process has to exit after SIGTERM before it is
// killed.
const stopGrace = 15 * time.Second

// process is a subprocess whose standard output and error go to a log file.
type process struct {
	name string
	log  string
	// logStart is where this run's output begins in log: a process started
	// again appends to the log of its earlier runs.
	logStart int64
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited; err is set
	err      error
}

// startProcess starts bin with args, appending to the log file logPath.
func startProcess(name, bin, logPath string, args []string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own descriptor
	var logStart int64
	if info, err := log.Stat(); err == nil {
		logStart = info.Size()
	}
	fmt.Fprintf(log, "==== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, log: logPath, logStart: logStart, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited returns an error if the process has exited, nil while it runs.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v (log: %s)", p.name, p.err, p.log)
	default:
		return nil
	}
}

// bindFailed reports whether the process exited because its port was taken
// between choosing it and binding it.
func (p *process) bindFailed() bool {
	if p.exited() == nil {
		return false
	}
	f, err := os.Open(p.log)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(p.logStart, io.SeekStart); err != nil {
		return false
	}
	log, err := io.ReadAll(f)
	return err == nil && strings.Contains(string(log), "address already in use")
}

// stop sends SIGTERM, kills the process if it has not exited after
// stopGrace, and waits for it. It returns an error if the process had exited
// before or had to be killed.
func (p *process) stop() error {
	if err := p.exited(); err != nil {
		return err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("%s did not exit within %v of SIGTERM and was killed (log: %s)", p.name, stopGrace, p.log)
}

// stopAll stops the processes in order, all of them even if some fail.
func stopAll(ps ...*process) error {
	var errs []error
	for _, p := range ps {
		if p != nil {
			errs = append(errs, p.stop())
		}
	}
	return errors.Join(errs...)
}
