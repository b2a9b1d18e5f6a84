//go:build unix

package mcp

import (
	"errors"
	"io"
	"os"
	"runtime"
	"testing"
	"time"
)

// spinPipe returns a pipe whose read end a spinReader reads, and the
// number of tries of each read that went on to wait in the poller.
func spinPipe(t *testing.T) (*spinReader, *os.File, chan int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	s := newSpinReader(r)
	if s == nil {
		t.Fatal("no spinReader for an OS pipe")
	}
	waits := make(chan int, 16)
	s.onWait = func(tries int) { waits <- tries }
	return s, w, waits
}

// TestSpinReaderReadsWhatComesAfterItWaits: a read that found nothing for
// its whole span waits in the poller and returns what is written then.
func TestSpinReaderReadsWhatComesAfterItWaits(t *testing.T) {
	s, w, waits := spinPipe(t)
	go func() {
		<-waits // written only once the read has stopped trying
		w.Write([]byte("late\n"))
	}()
	buf := make([]byte, 64)
	n, err := s.Read(buf)
	if err != nil || string(buf[:n]) != "late\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	// What is there already is read at once, without waiting.
	w.Write([]byte("now\n"))
	if n, err = s.Read(buf); err != nil || string(buf[:n]) != "now\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	select {
	case tries := <-waits:
		t.Fatalf("a read of data already there waited (after %d tries)", tries)
	default:
	}
}

// TestSpinReaderTriesOnlyWithASecondProcessor: spinning on the only
// processor would keep the writer of the answer from running.
func TestSpinReaderTriesOnlyWithASecondProcessor(t *testing.T) {
	for _, procs := range []int{1, 2} {
		s, w, waits := spinPipe(t)
		prev := runtime.GOMAXPROCS(procs)
		go func() {
			<-waits
			w.Write([]byte("x\n"))
		}()
		_, err := s.Read(make([]byte, 8))
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		if tries := s.tries; procs == 1 && tries != 0 || procs > 1 && tries == 0 {
			t.Fatalf("GOMAXPROCS %d: %d tries before waiting", procs, tries)
		}
	}
}

// TestSpinReaderEndsAsOSFileDoes: a deadline, Close and the writer's end
// give the errors os.File gives.
func TestSpinReaderEndsAsOSFileDoes(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		s, _, _ := spinPipe(t)
		s.f.SetReadDeadline(time.Now().Add(-time.Second))
		if _, err := s.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read past the deadline = %v", err)
		}
	})
	t.Run("close", func(t *testing.T) {
		s, _, waits := spinPipe(t)
		go func() {
			<-waits
			s.f.Close()
		}()
		if _, err := s.Read(make([]byte, 8)); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("Read of a closed pipe = %v", err)
		}
	})
	t.Run("end", func(t *testing.T) {
		s, w, _ := spinPipe(t)
		w.Write([]byte("last"))
		w.Close()
		buf := make([]byte, 8)
		if n, err := s.Read(buf); err != nil || string(buf[:n]) != "last" {
			t.Fatalf("Read = %q, %v", buf[:n], err)
		}
		if n, err := s.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("Read at the end = %d, %v", n, err)
		}
	})
}
