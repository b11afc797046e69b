//go:build !unix

package jinja

import "time"

func processCPUTime() time.Duration { return 0 }
