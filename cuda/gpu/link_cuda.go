//go:build cuda && !cudaemu

package gpu

// #cgo LDFLAGS: -L${SRCDIR} -laglcuda -lcublas -lcudart -lstdc++ -lm
import "C"
