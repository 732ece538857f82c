package fs

import (
	"os"
	"path"
)

// writeSynced writes data to name (opened with os.O_WRONLY|os.O_CREATE|flag) and fsyncs it.
func writeSynced(root *os.Root, name string, data []byte, flag int) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|flag, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs the directory dir, making renames and new names in it durable.
func syncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// replaceAtomic replaces name with data so that readers see the old or the new content,
// never a mix, also across a crash: it writes tmp, fsyncs it, renames it over name and
// fsyncs the directory. tmp must be in name's directory and used by one writer at a time.
func replaceAtomic(root *os.Root, name, tmp string, data []byte) error {
	if err := writeSynced(root, tmp, data, os.O_TRUNC); err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		root.Remove(tmp)
		return err
	}
	return syncDir(root, path.Dir(name))
}

// replaceFile is replaceAtomic with the fixed temp name .<base>.tmp, for files written
// only under their directory's lock (a stale temp left by a crash is simply overwritten).
func replaceFile(root *os.Root, name string, data []byte) error {
	return replaceAtomic(root, name, path.Join(path.Dir(name), "."+path.Base(name)+".tmp"), data)
}
