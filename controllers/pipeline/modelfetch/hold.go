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
	"syscall"
	"time"
)

// HoldCommand is the name of the pipeline-controller's subcommand that holds a model in the cache while a step's
// pod runs: pipeline-controller hold-model --uri … --cache-dir … . It runs beside the server (a sidecar): the
// fetch runs once, when the pod starts, so without it a pod that runs longer than the cache keeps unused models
// would find its model evicted the next time its server restarts.
const HoldCommand = "hold-model"

// inUseSuffix names a key's in-use lock, <key>.inuse: each pod using a model of the key holds it shared, and an
// eviction of the key's entries needs it exclusively.
const inUseSuffix = ".inuse"

// holdRetry is how often a hold tries again to open the in-use lock (the fetch makes it) or to take it (an
// eviction holds it for a moment).
const holdRetry = time.Second

// HoldMain runs the hold-model command with its arguments and returns its exit code: it holds the model's in-use
// lock until the process is told to stop.
func HoldMain(args []string, out io.Writer) int {
	fs := flag.NewFlagSet(HoldCommand, flag.ContinueOnError)
	fs.SetOutput(out)
	uri := fs.String("uri", "", "the model's URI, as the fetch was given it")
	cacheDir := fs.String("cache-dir", "", "the node-local cache's root")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	key, err := KeyOf(*uri)
	if err != nil || *cacheDir == "" {
		_, _ = fmt.Fprintf(out, "%s: --uri (a model URI) and --cache-dir are required: %v\n", HoldCommand, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	release, err := Hold(ctx, *cacheDir, key)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return 0 // told to stop before the hold was taken
		}
		_, _ = fmt.Fprintf(out, "%s: %v\n", HoldCommand, err)
		return 1
	}
	_, _ = fmt.Fprintf(out, "%s: holding %s in the cache\n", HoldCommand, *uri)
	<-ctx.Done()
	release()
	return 0
}

// Hold takes key's in-use lock, shared, in the cache at root, and returns its release; the lock dies with the
// process too. It waits, until ctx ends, for the lock file (the fetch makes it) and for an eviction that holds it.
// The file is opened read-only: a hold needs no write access to the cache.
func Hold(ctx context.Context, root, key string) (func(), error) {
	path := filepath.Join(root, key+inUseSuffix)
	for {
		f, err := os.Open(path)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
			if err == nil {
				return func() { _ = f.Close() }, nil
			}
			_ = f.Close()
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("holding %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(holdRetry):
		}
	}
}
