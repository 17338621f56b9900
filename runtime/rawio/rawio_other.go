//go:build !linux

package rawio

import (
	"io"
	"os"
)

type conn struct{ io.ReadWriter }

func wrap(any) *conn { return nil }

func pollable(*os.File) *pollableFile { return nil }
