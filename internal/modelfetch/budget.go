package modelfetch

import (
	"fmt"
	"io"
)

// budget counts the bytes a fetch writes, against a limit (none when 0): a download, or what an archive unpacks to.
// Each byte is claimed from the cache's bound first (room; nil when the cache has none).
type budget struct {
	limit, used int64
	entries     int
	room        *room
}

// space is what a fetch may write: at most limit bytes (0: no limit), each claimed from room first.
type space struct {
	limit int64
	room  *room
}

// budget is a new budget of the space: a download's, or an unpacking's.
func (s space) budget() *budget { return &budget{limit: s.limit, room: s.room} }

// download is the space of downloading the file name: an archive's download is staging, deleted once unpacked, and
// only what it unpacks to is claimed from the bound (the cache's volume leaves room for staging beside the bound),
// so an archive whose model fits the bound is not refused for the archive and its model side by side.
func (s space) download(name string) space {
	if archiveKind(name) != "" {
		s.room = nil
	}
	return s
}

// writer counts what goes through w against the budget.
func (b *budget) writer(w io.Writer) io.Writer {
	if b == nil || (b.limit <= 0 && b.room == nil) {
		return w
	}
	return &limitedWriter{w: w, b: b}
}

type limitedWriter struct {
	w io.Writer
	b *budget
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.b.limit > 0 && l.b.used+int64(len(p)) > l.b.limit {
		return 0, fmt.Errorf("%w (%d bytes)", errTooLarge, l.b.limit)
	}
	if err := l.b.room.grow(int64(len(p))); err != nil {
		return 0, err
	}
	n, err := l.w.Write(p)
	l.b.used += int64(n)
	return n, err
}

// Each file and directory an archive makes costs at least entryCost bytes of the budget (a block and an inode: an
// archive of millions of empty files would fill a node's inodes for no bytes at all), and an archive makes at most
// maxEntries of them.
const (
	entryCost  = 4096
	maxEntries = 100000
)

// entry charges one file or directory of an archive.
func (b *budget) entry() error {
	if b == nil {
		return nil
	}
	b.entries++
	if b.entries > maxEntries {
		return fmt.Errorf("%w: more than %d files and directories", errTooLarge, maxEntries)
	}
	if b.limit > 0 {
		b.used += entryCost
		if b.used > b.limit {
			return fmt.Errorf("%w (%d bytes)", errTooLarge, b.limit)
		}
	}
	return b.room.grow(entryCost)
}
