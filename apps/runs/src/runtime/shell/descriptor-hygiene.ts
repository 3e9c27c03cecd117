import koffi from 'koffi';

/** close_range(2)'s flag: mark the range close-on-exec instead of closing it (Linux 5.11, glibc 2.34). */
const CLOSE_RANGE_CLOEXEC = 1 << 2;
const FIRST_BEYOND_STDIO = 3;
const LAST_DESCRIPTOR = 0xffffffff;

type CloseRange = (first: number, last: number, flags: number) => number;
let closeRange: CloseRange | null = null;

/**
 * Marks every descriptor of this process beyond stdio close-on-exec, so a sandbox started next inherits none of
 * them: Node and libuv open theirs close-on-exec, but a descriptor the service inherited from its parent, or one a
 * native module opened, would otherwise reach the tenant's processes. (The sandbox's own pipes are set up by libuv
 * in the child after this, so they stay.) Throws when the kernel or libc cannot do it; the sandbox then fails closed.
 */
export function markDescriptorsCloseOnExec(): void {
  closeRange ??= koffi.load('libc.so.6').func('int close_range(unsigned int first, unsigned int last, int flags)') as CloseRange;
  if (closeRange(FIRST_BEYOND_STDIO, LAST_DESCRIPTOR, CLOSE_RANGE_CLOEXEC) !== 0) {
    throw new Error('close_range(CLOSE_RANGE_CLOEXEC) failed: Linux 5.11 and glibc 2.34 or later are needed');
  }
}
