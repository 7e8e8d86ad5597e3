package modelfetch

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lockPoll is how often a fetch that waits for a lock tries again.
const lockPoll = 100 * time.Millisecond

// lockFile takes an exclusive lock on the file at path (made if missing), waiting until ctx ends. It returns the
// unlock. A lock dies with its process, so a fetch killed midway leaves no lock behind.
func lockFile(ctx context.Context, path string) (func(), error) {
	for {
		unlock, ok, err := tryLockFile(path)
		if err != nil || ok {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, failed(ReasonLockTimeout, errors.New("waited for another fetch on this node until the deadline: "+ctx.Err().Error()))
		case <-time.After(lockPoll):
		}
	}
}

// tryLockFile takes the lock if it is free; ok is false when another holds it.
func tryLockFile(path string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { _ = f.Close() }, true, nil // closing the file releases the lock
}
