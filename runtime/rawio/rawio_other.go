//go:build !linux

package rawio

import (
	"io"
	"os"
)

type conn struct{ io.ReadWriter }

func wrap(any) *conn { return nil }

type pollableFile struct {
	file    *os.File
	restore func()
}

func pollable(*os.File) *pollableFile { return nil }
