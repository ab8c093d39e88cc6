/*
 * assert.h - invariant checks that stay on in release builds.
 *
 * sw_assert is for the program's own invariants only. Failures of the
 * environment (a server's reply, a file, memory) are errors, never asserts.
 */
#ifndef SW_COMMON_ASSERT_H
#define SW_COMMON_ASSERT_H

/** Prints the failed expression with its place and aborts. */
_Noreturn void sw__assert_fail(const char *expr, const char *file, int line, const char *func);

#define sw_assert(expr) ((expr) ? (void)0 : sw__assert_fail(#expr, __FILE__, __LINE__, __func__))

#endif
