package osutil

import (
	"os"
	"path/filepath"
)

// WriteFile writes data to path so that readers see either the old file or
// the whole new one: a temporary file in the same directory (named
// ".<base>.tmp*"), written, given perm, fsynced, renamed into place, then
// the directory fsynced. On error the temporary file is removed and path is
// left as it was. Errors are the os package's (*fs.PathError,
// *os.LinkError), naming the file.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs directory dir, so that a rename into it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
