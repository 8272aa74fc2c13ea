package githook

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// marker is in every hook Install writes: a hook without it is someone
// else's, and Install leaves it alone.
const marker = "# Installed by heaven-server"

// Install makes <repository>/hooks/pre-receive run `<executable> hook
// pre-receive`, rewriting a hook installed earlier (the binary may have
// moved); an empty executable removes a hook installed earlier. A hook
// someone else wrote is kept, and Install says so.
func Install(repository, executable string) error {
	path := filepath.Join(repository, "hooks", "pre-receive")
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !bytes.Contains(old, []byte(marker)):
		return fmt.Errorf("%s exists and was not installed by heaven-server: pushed files are not checked", path)
	}
	if executable == "" {
		if err == nil {
			return os.Remove(path)
		}
		return nil
	}
	script := fmt.Sprintf("#!/bin/sh\n%s: it refuses pushed files the server would\n# not serve (see `heaven-server hook pre-receive --help`). Rewritten on every start.\nexec %s hook pre-receive\n",
		marker, shellQuote(executable))
	if string(old) == script {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
