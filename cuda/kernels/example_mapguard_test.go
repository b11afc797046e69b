//go:build linux

package kernels_test

import (
	"bytes"
	"fmt"
	"log"
	"os"

	"github.com/agentrl/agentrl/cuda/kernels"
	"golang.org/x/sys/unix"
)

// A checkpoint mapped read-only is cut short by another process while it
// is in use: the read does not crash, it sees zeros past the new end, and
// the guard reports the damage so the caller can fail instead of using the
// result.
func ExampleGuardMapping() {
	page := os.Getpagesize()
	f, err := os.CreateTemp("", "weights")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{1}, 4*page)); err != nil {
		log.Fatal(err)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, 4*page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		log.Fatal(err)
	}
	defer unix.Munmap(b)
	g, err := kernels.GuardMapping(b)
	if err != nil {
		fmt.Println("read the file into memory instead:", err)
		return
	}
	defer g.Release() // runs before Munmap

	fmt.Println("damaged before:", g.Damaged())
	if err := os.Truncate(f.Name(), int64(page)); err != nil {
		log.Fatal(err)
	}
	sum := 0
	for _, v := range b {
		sum += int(v)
	}
	fmt.Println("bytes still readable:", sum == page)
	fmt.Println("damaged after:", g.Damaged())
	// Output:
	// damaged before: false
	// bytes still readable: true
	// damaged after: true
}
