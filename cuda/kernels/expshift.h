// exp(x − m) over a vector of float64, with its sum (expshift.c).
#ifndef AGL_EXPSHIFT_H
#define AGL_EXPSHIFT_H
#include <stdint.h>

// Sets dst[i] = exp(x[i] − m) for i < n (dst may be NULL) and returns their
// sum. exp is within 1 ulp of the true value and the sum is taken in 32
// partial sums (element i into partial i mod 32, in index order) added in a
// fixed tree: level 0 generic, 1 AVX2+FMA, 2 AVX-512F give the same bits.
double agl_expshift(int level, const double* x, int64_t n, double m, double* dst);

// agl_expshift's sum for floats, each widened to double first: the same
// bits as agl_expshift on the widened values.
double agl_expshift_sum_f32(int level, const float* x, int64_t n, double m);
#endif
