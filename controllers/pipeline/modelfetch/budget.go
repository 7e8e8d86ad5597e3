package modelfetch

import (
	"errors"
	"fmt"
	"io"
)

// errTooLarge is a model larger than the cache may hold: it is refused before it fills the node's disk.
var errTooLarge = errors.New("the model is larger than the cache may hold")

// budget counts the bytes a fetch writes, against a limit (none when 0): a download, or what an archive unpacks to.
type budget struct {
	limit, used int64
}

// writer counts what goes through w against the budget.
func (b *budget) writer(w io.Writer) io.Writer {
	if b == nil || b.limit <= 0 {
		return w
	}
	return &limitedWriter{w: w, b: b}
}

type limitedWriter struct {
	w io.Writer
	b *budget
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.b.used+int64(len(p)) > l.b.limit {
		return 0, fmt.Errorf("%w (%d bytes)", errTooLarge, l.b.limit)
	}
	n, err := l.w.Write(p)
	l.b.used += int64(n)
	return n, err
}
