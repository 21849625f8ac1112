/**
 * The errno numbers forkbox's host code and seccomp profile name (asm-generic/errno-base.h, errno.h: the
 * same on x86_64 and aarch64, the platforms the native runtime targets). Defined once, here.
 */
export const EPERM = 1;
export const EINTR = 4;
/** EAGAIN, also called EWOULDBLOCK. */
export const EWOULDBLOCK = 11;
export const ENOSYS = 38;
export const EAFNOSUPPORT = 97;
