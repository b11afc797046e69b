// SIGBUS guard for read-only file mappings (mapguard.c, Linux only).
#ifndef AGL_MAPGUARD_H
#define AGL_MAPGUARD_H

#include <stddef.h>
#include <stdint.h>

// AGL_MAPGUARD_SLOTS is the number of mappings that can be registered at once.
#define AGL_MAPGUARD_SLOTS 1024

// agl_mapguard_install installs the SIGBUS handler, saving the previous
// action to chain to. It returns 0 or an errno value. Call it once.
int agl_mapguard_install(void);

// agl_mapguard_register publishes [start, end) in a free slot and returns
// the slot, -1 when the table is full or -2 when [start, end) overlaps a
// registered range.
int agl_mapguard_register(uintptr_t start, uintptr_t end);

// agl_mapguard_unregister frees a slot and returns its damage flag.
int agl_mapguard_unregister(int slot);

// agl_mapguard_damaged is 1 once the handler replaced a page of the slot's
// range with zeros.
int agl_mapguard_damaged(int slot);

// agl_mapguard_sum adds n bytes at p in C (test support: a read by C code,
// as the kernels read weights).
uint64_t agl_mapguard_sum(const unsigned char *p, size_t n);

// agl_mapguard_test_hook changes the guard for a test, in a child process
// only. Modes 0-2 replace the saved previous action: 0 SIG_DFL, 1 SIG_IGN,
// 2 a plain (non-SA_SIGINFO) handler that writes a line to stderr and exits
// 3. Mode 3 makes the repair fail for faults off a page boundary (the page
// size becomes 1, so the MAP_FIXED address is misaligned).
void agl_mapguard_test_hook(int mode);

#endif
