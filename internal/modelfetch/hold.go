package modelfetch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// HoldCommand is the name of the pipeline-controller's subcommand that holds a model in the cache while a step's
// pod runs: pipeline-controller hold-model --links-dir … --cache-dir … . It runs beside the server (a sidecar): the
// fetch runs once, when the pod starts, so without it a pod that runs longer than the cache keeps unused models
// would find its model evicted the next time its server restarts.
const HoldCommand = "hold-model"

// holdRetry is how often a hold tries again to take the in-use lock while an eviction holds it for a moment.
const holdRetry = time.Second

// HoldMain runs the hold-model command with its arguments and returns its exit code: it holds the in-use lock of
// the entry the fetch linked into --links-dir until the process is told to stop.
func HoldMain(args []string, out io.Writer) int {
	fs := flag.NewFlagSet(HoldCommand, flag.ContinueOnError)
	fs.SetOutput(out)
	links := fs.String("links-dir", "", "the directory the fetch filled with links to the model (the step's MODEL_PATH)")
	cacheDir := fs.String("cache-dir", "", "the node-local cache's root")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *links == "" || *cacheDir == "" {
		_, _ = fmt.Fprintf(out, "%s: --links-dir and --cache-dir are required\n", HoldCommand)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The hold only keeps evictions off the model: whatever goes wrong, it says so and stays up, since a sidecar
	// that exits would take the pod's server out of its Service with it.
	idle := func(format string, a ...any) int {
		_, _ = fmt.Fprintf(out, HoldCommand+": "+format+"\n", a...)
		<-ctx.Done()
		return 0
	}
	entry, err := LinkedEntry(*links, *cacheDir)
	switch {
	case err != nil:
		return idle("nothing held: %v", err)
	case entry == "":
		return idle("the model has no files: nothing to hold")
	}
	release, err := Hold(ctx, entry)
	switch {
	case errors.Is(err, context.Canceled):
		return 0 // told to stop before the hold was taken
	case err != nil:
		return idle("nothing held: %v", err)
	}
	defer release()
	if _, err := os.Stat(filepath.Join(entry, entryFile)); err != nil {
		// Evicted before the hold was taken (this sidecar restarted more than a day after the fetch): the
		// server's links point nowhere, and a new pod fetches the model again.
		return idle("the entry %s was evicted before it was held: the model's links point nowhere until the pod is "+
			"recreated (%v)", entry, err)
	}
	_, _ = fmt.Fprintf(out, "%s: holding %s\n", HoldCommand, entry)
	<-ctx.Done()
	return 0
}

// LinkedEntry is the cache entry (its directory, below root) that the links in dir point into, as the fetch left
// them: <root>/<key>/<entry>/model/<name> (all of them into one entry: the first is read). "" when dir holds no
// link (a model without files).
func LinkedEntry(dir, root string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", err
		}
		entry := filepath.Dir(filepath.Dir(target))
		rel, err := filepath.Rel(root, entry)
		parts := strings.Split(rel, string(filepath.Separator))
		if err != nil || len(parts) != 2 || strings.HasPrefix(parts[0], ".") || strings.HasPrefix(parts[1], ".") ||
			filepath.Base(filepath.Dir(target)) != modelDir {
			return "", fmt.Errorf("link %s points to %s, not into a cache entry below %s", e.Name(), target, root)
		}
		return entry, nil
	}
	return "", nil
}

// Hold takes an entry's in-use lock, shared, and returns its release; the lock dies with the process too. It waits,
// until ctx ends, while an eviction holds the lock. The file is opened read-only: a hold needs no write access.
func Hold(ctx context.Context, entry string) (func(), error) {
	path := entry + inUseSuffix
	for {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("holding %s: %w", path, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		_ = f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("holding %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(holdRetry):
		}
	}
}
