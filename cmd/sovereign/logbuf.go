package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// bufferedLog batches log lines into fewer writes: a write syscall per
// request line was a measurable part of the API's latency in front of a
// fast upstream. Lines reach the underlying writer within flushEvery, when
// the buffer fills, and on Close. A crash can lose at most flushEvery of
// lines.
type bufferedLog struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

const flushEvery = 100 * time.Millisecond

func newBufferedLog(w io.Writer) *bufferedLog {
	b := &bufferedLog{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// Write buffers p (one log record).
func (b *bufferedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

func (b *bufferedLog) flush() {
	b.mu.Lock()
	b.w.Flush()
	b.mu.Unlock()
}

func (b *bufferedLog) loop() {
	defer close(b.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			b.flush()
			return
		case <-t.C:
			b.flush()
		}
	}
}

// Close flushes what is buffered and stops the flusher.
func (b *bufferedLog) Close() error {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
	return nil
}
