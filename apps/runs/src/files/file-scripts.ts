/**
 * The shell text each file operation runs INSIDE the intern's sandbox, as its uid (interface section 21). The path
 * always arrives as a positional parameter (`$1`), never in the text. Every path is resolved in the sandbox, where
 * `/workspace` is the only writable host directory and nothing else of the host is visible: a symlink or `..`
 * could at worst lead to the sandbox's own read-only system files, and is refused before that (400). Answers:
 * stdout (a listing, a file's bytes, a written entry), stderr (our own one-line reason), and the exit code below.
 */

/** Exit codes of the scripts, as the caller maps them. */
export const FILE_SCRIPT_EXIT = {
  notFound: 3,
  /** The path leads out of the workspace, or through a symlink loop. */
  outside: 4,
  /** The path names the wrong kind of thing (a directory to write, a FIFO to read, a file as a parent, ...). */
  wrongKind: 5,
  /** ENOSPC / EDQUOT / EFBIG: the workspace quota. */
  full: 6,
  /** A non-empty directory without `recursive`. */
  notEmpty: 7,
} as const;

/** Shared helpers: where a path leads, judged inside the sandbox (LC_ALL=C, so errors are read in one language). */
const PRELUDE = `
set -u
LC_ALL=C; export LC_ALL
inside() { case "$1" in /workspace|/workspace/*) return 0;; *) return 1;; esac; }
out() { echo "the path leads out of the workspace or through a symlink loop" >&2; exit ${FILE_SCRIPT_EXIT.outside}; }
missing() { echo "no such file or directory" >&2; exit ${FILE_SCRIPT_EXIT.notFound}; }
# resolve P: r = P with every symlink resolved, which must exist and stay in the workspace.
resolve() {
  if r=$(realpath -e -- "$1" 2>/tmp/.resolve.err); then inside "$r" || out; return 0; fi
  grep -qE 'No such file|Not a directory' /tmp/.resolve.err || out
  m=$(realpath -m -- "$1" 2>/dev/null) && inside "$m" || out
  missing
}
full() { grep -qE 'No space left|quota exceeded|File too large' "$1"; }
`;

/**
 * The download's reader moves the file in blocks this large: `head -c` reads and writes 8 KiB at a time, which made
 * the runs service wake for every 8 KiB of a 100 MiB file; one block is about one transfer chunk (FILE_CHUNK_BYTES).
 */
const READ_BLOCK_BYTES = 1024 * 1024;

/**
 * Read `$1`: a directory answers `D` then one NUL-terminated record per entry, `name/type/size/mtime` (find's
 * `%y` type letter), sorted by name bytewise, at most `$2` + 1 of them (one more says the listing is truncated).
 * A regular file answers `F<size>/<inode>/<mtime ns>\n` then exactly its bytes: opened first, then measured through
 * the open descriptor, so the header and the bytes are of the same file even if it is replaced meanwhile.
 */
export const READ_SCRIPT = `${PRELUDE}
resolve "\${1:-.}"
if [ -d "$r" ]; then
  printf D
  find "$r" -mindepth 1 -maxdepth 1 -printf '%f/%y/%s/%T@\\0' | sort -z -t / -k 1,1 | head -z -n "$(($2 + 1))"
  exit 0
fi
[ -f "$r" ] || { echo "not a regular file or a directory" >&2; exit ${FILE_SCRIPT_EXIT.wrongKind}; }
exec 3< "$r" || exit ${FILE_SCRIPT_EXIT.wrongKind}
header=$(stat -L -c '%s/%i/%.9Y' /dev/fd/3) || exit 1
printf 'F%s\\n' "$header"
exec dd bs=${READ_BLOCK_BYTES} count="\${header%%/*}" iflag=count_bytes status=none <&3
`;

/** Length of the commit mark (hex) that ends a completed upload's stdin; see WRITE_SCRIPT. */
export const UPLOAD_COMMIT_MARK_LENGTH = 32;

/**
 * Write `$1` from stdin: parents made (`mkdir -p` on the resolved parent, which must stay in the workspace), the bytes
 * streamed to `$2` (a temporary name) in the same directory, then renamed over the target (atomic). stdin ends with
 * `$3`, a mark the runs service draws per upload and writes only when the upload is complete: a pipe that closes
 * without it (the runs side killed the sandbox, which also closes stdin; under load the script could otherwise read
 * that end as a complete file and rename it) keeps nothing. The mark is cut off before the rename. Before the bytes,
 * stdout carries the resolved parent and the first directory it creates (or nothing), each NUL-terminated, so a
 * caller that must kill it knows what to remove; at the end `<existed 0|1>/<size>/<mtime>` and a NUL. A failure removes the temporary file and what it created.
 */
export const WRITE_SCRIPT = `${PRELUDE}
d=$(dirname -- "$1"); b=$(basename -- "$1")
m=$(realpath -m -- "$d" 2>/dev/null) && inside "$m" || out
if [ -e "$m" ] && ! [ -d "$m" ]; then echo "a parent of the path is not a directory" >&2; exit ${FILE_SCRIPT_EXIT.wrongKind}; fi
first=""; q="$m"
while [ ! -e "$q" ] && [ ! -L "$q" ]; do first="$q"; q=$(dirname -- "$q"); done
printf '%s\\0%s\\0' "$m" "$first"
undo() { rm -f -- "$tmp"; if [ -n "$first" ]; then rm -rf -- "$first"; fi; }
tmp="$m/$2"
if ! mkdir -p -- "$m" 2>/tmp/.write.err; then
  tmp=""; undo; full /tmp/.write.err && { echo "the workspace quota is reached" >&2; exit ${FILE_SCRIPT_EXIT.full}; }
  echo "a parent of the path is not a directory" >&2; exit ${FILE_SCRIPT_EXIT.wrongKind}
fi
t="$m/$b"
if [ -d "$t" ] && [ ! -L "$t" ]; then tmp=""; undo; echo "the path names a directory" >&2; exit ${FILE_SCRIPT_EXIT.wrongKind}; fi
if [ -e "$t" ] || [ -L "$t" ]; then existed=1; else existed=0; fi
if ! cat > "$tmp" 2>/tmp/.write.err; then
  undo; full /tmp/.write.err && { echo "the workspace quota is reached" >&2; exit ${FILE_SCRIPT_EXIT.full}; }
  head -c 200 /tmp/.write.err >&2; exit 1
fi
if [ "$(tail -c ${UPLOAD_COMMIT_MARK_LENGTH} -- "$tmp" 2>/dev/null)" != "$3" ] || ! truncate -s -${UPLOAD_COMMIT_MARK_LENGTH} -- "$tmp" 2>/dev/null; then
  undo; echo "the upload was cut short" >&2; exit 1
fi
if ! mv -fT -- "$tmp" "$t" 2>/tmp/.write.err; then undo; echo "the path names a directory" >&2; exit ${FILE_SCRIPT_EXIT.wrongKind}; fi
printf '%s/' "$existed"
find "$t" -maxdepth 0 -printf '%s/%T@\\0'
`;

/** Removes what an upload that was killed left: `$1` its temporary file, `$2` the first directory it created (or ''). */
export const UPLOAD_CLEANUP_SCRIPT = `rm -f -- "$1"; if [ -n "$2" ]; then rm -rf -- "$2"; fi`;

/** Delete `$1` (never followed when it is a symlink: the link goes); a directory only when empty, or `$2` = 1. */
export const DELETE_SCRIPT = `${PRELUDE}
d=$(dirname -- "$1"); b=$(basename -- "$1")
resolve "$d"
t="$r/$b"
[ -e "$t" ] || [ -L "$t" ] || missing
if [ -d "$t" ] && [ ! -L "$t" ]; then
  if [ "$2" = 1 ]; then rm -rf -- "$t" 2>/tmp/.delete.err || { head -c 200 /tmp/.delete.err >&2; exit 1; }
  else rmdir -- "$t" 2>/dev/null || { echo "the directory is not empty (delete it with ?recursive=true)" >&2; exit ${FILE_SCRIPT_EXIT.notEmpty}; }; fi
else
  rm -f -- "$t" 2>/tmp/.delete.err || { head -c 200 /tmp/.delete.err >&2; exit 1; }
fi
`;
