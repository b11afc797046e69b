//go:build !unix

package safetensors

import (
	"errors"
	"os"
)

var errNoMap = errors.New("memory mapping is not supported on this OS")

func mapRead(*os.File, int) ([]byte, error) { return nil, errNoMap }

func unmap([]byte) error { return errNoMap }

func dupFile(*os.File) (*os.File, error) { return nil, errNoMap }

func stampOf(*os.File) (fileStamp, error) { return fileStamp{}, errNoMap }
