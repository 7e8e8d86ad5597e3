package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/keelson-dev/keelson/tools/internal/wait"
)

// Proc is one host process of the cluster.
type Proc struct {
	// Name names its PID file and log.
	Name string
	// Path is the binary.
	Path string
	// Args are its arguments.
	Args []string
}

// pidFile holds "<pid> <binary>": the binary lets stop tell our process from an unrelated one that reused the PID.
func (l Layout) pidFile(name string) string { return filepath.Join(l.PIDsDir(), name+".pid") }

// logFile is the process's combined output.
func (l Layout) logFile(name string) string { return filepath.Join(l.LogsDir(), name+".log") }

// Start runs p detached from this process (its own session, so it outlives the command and a Ctrl-C of make
// does not reach it), output in its log (a fresh one), and records its PID.
func (l Layout) Start(p Proc) error { return l.start(p, os.O_TRUNC) }

// start is Start with the log opened with mode: os.O_TRUNC for a fresh log, os.O_APPEND to keep the last run's.
func (l Layout) start(p Proc, mode int) error {
	if err := os.MkdirAll(l.PIDsDir(), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(l.LogsDir(), 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(l.logFile(p.Name), os.O_CREATE|os.O_WRONLY|mode, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	path, err := exec.LookPath(p.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return err
	}
	cmd := exec.Command(path, p.Args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	if err := os.WriteFile(l.pidFile(p.Name), fmt.Appendf(nil, "%d %s\n", cmd.Process.Pid, path), 0o644); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// ParsePIDFile reads "<pid> <binary>".
func ParsePIDFile(b []byte) (int, string, error) {
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0, "", fmt.Errorf("want \"<pid> <binary>\", got %q", strings.TrimSpace(string(b)))
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 1 {
		return 0, "", fmt.Errorf("bad PID %q", fields[0])
	}
	return pid, fields[1], nil
}

// Running returns the PID of the named process when its PID file names a live process running the recorded binary.
// A dead process, a zombie (nobody reaps the detached processes on some hosts) or a reused PID counts as not running.
func (l Layout) Running(name string) (int, bool) {
	b, err := os.ReadFile(l.pidFile(name))
	if err != nil {
		return 0, false
	}
	pid, binary, err := ParsePIDFile(b)
	if err != nil {
		return 0, false
	}
	return pid, processRuns(pid, binary)
}

// RunningProc returns the named process as it runs: the binary its PID file records and the arguments of its
// command line (/proc/<pid>/cmdline), so that it can be started again exactly as it was.
func (l Layout) RunningProc(name string) (Proc, error) {
	pid, ok := l.Running(name)
	if !ok {
		return Proc{}, fmt.Errorf("%s is not running (make cluster-up)", name)
	}
	b, err := os.ReadFile(l.pidFile(name))
	if err != nil {
		return Proc{}, err
	}
	_, binary, err := ParsePIDFile(b)
	if err != nil {
		return Proc{}, err
	}
	// The binary must still be there, the one that runs: a restart that could not start it again, or would start
	// another, would leave the cluster without its store or its apiserver.
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != binary {
		return Proc{}, fmt.Errorf("%s runs %q, not %s as recorded: it cannot be started again as it is", name, exe, binary)
	}
	if _, err := exec.LookPath(binary); err != nil {
		return Proc{}, fmt.Errorf("%s cannot be started again: %w", name, err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return Proc{}, err
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	// Read from a process that is still the one recorded (it did not exit meanwhile and leave an empty line).
	if len(args) == 0 || args[0] == "" || !processRuns(pid, binary) {
		return Proc{}, fmt.Errorf("%s exited while its command line was read", name)
	}
	return Proc{Name: name, Path: binary, Args: args[1:]}, nil
}

// processRuns says whether pid is alive, not a zombie, and runs binary.
func processRuns(pid int, binary string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || processState(string(stat)) == "Z" {
		return false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == binary
}

// processState returns the state letter of a /proc/<pid>/stat line; the command name in parentheses may itself
// hold spaces and parentheses, so the state is found after the last ')'.
func processState(stat string) string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return ""
	}
	return stat[i+2 : i+3]
}

// Stop sends SIGTERM to the named process, waits up to grace for it to exit, then sends SIGKILL, and removes its
// PID file. Only the recorded PID is signalled, and only while it still runs the recorded binary.
func (l Layout) Stop(name string, grace time.Duration) error {
	b, err := os.ReadFile(l.pidFile(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, binary, err := ParsePIDFile(b)
	if err == nil && processRuns(pid, binary) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if pollErr := wait.Poll(context.Background(), 100*time.Millisecond, grace, func() (bool, error) { return !processRuns(pid, binary), nil }); pollErr != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return os.Remove(l.pidFile(name))
}
