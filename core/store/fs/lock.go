package fs

import (
	"errors"
	iofs "io/fs"
	"os"
	"path"
	"syscall"
)

// lockName is the flock(2) target inside a locked directory.
const lockName = ".lock"

// lock takes an exclusive flock(2) on dir/.lock (creating dir and the file as needed) and
// returns the function that releases it. flock serialises open file descriptions, so it
// excludes goroutines of this process as well as other processes; the kernel drops it
// when the holder dies. A Delete may unlink the file while others wait on it, so after
// locking, the file must still be the one at the path; otherwise lock starts over.
func lock(root *os.Root, dir string) (unlock func(), err error) {
	name := path.Join(dir, lockName)
	for {
		if err := root.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, iofs.ErrExist) {
			return nil, err
		}
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if errors.Is(err, iofs.ErrNotExist) {
			continue // dir (re)moved by a concurrent delete
		}
		if err != nil {
			return nil, err
		}
		if err := flock(f); err != nil {
			f.Close()
			return nil, err
		}
		held, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		current, err := root.Stat(name)
		if err == nil && os.SameFile(held, current) {
			return func() { f.Close() }, nil
		}
		f.Close()
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return nil, err
		}
	}
}

// flock blocks until it holds an exclusive lock on f.
func flock(f *os.File) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	err = conn.Control(func(fd uintptr) {
		for {
			lockErr = syscall.Flock(int(fd), syscall.LOCK_EX)
			if !errors.Is(lockErr, syscall.EINTR) {
				return
			}
		}
	})
	return errors.Join(err, lockErr)
}
