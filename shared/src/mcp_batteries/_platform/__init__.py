"""What differs by operating system, behind one small interface with one implementation per family.

Owns: `family` (which implementation this process runs: `posix` where descriptor-relative
opens exist (Linux, macOS, the BSDs), `portable` elsewhere (Windows);
`MCP_BATTERIES_PLATFORM=portable` forces the portable one, as the tests do on Linux), `files`
(the active family's `Directory` and `Files`, declared in `interface`: names looked up in an open
directory without following links; `posix_files`: directory descriptors, `O_NOFOLLOW`,
`/proc/self/fd` on Linux, `F_GETPATH` on macOS; `portable_files`: resolve with the OS, then
prove by identity), `windows` (Windows path rules as pure functions: device names, streams,
trailing dots, long-path prefixes, UNC, drive letters), `stdio` (claiming fds 0/1 and whether
the loop can wait on them), `signals` (the stop signals a platform delivers), `processes` (ending
a child and its helpers, our own memory) and `userdirs` (where a server keeps its data).

Nothing outside this room imports `fcntl` or `termios`, reads `/proc`, or names `O_NOFOLLOW`,
`O_PATH`, `O_DIRECTORY` or `dir_fd` (tests/shared/platform/test_seam.py holds the code to that).
May import: nothing. Every other room may import it.
"""
