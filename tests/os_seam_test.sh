#!/usr/bin/env bash
# The OS seam holds: no source file above src/os/ calls the operating system
# itself (docs/architecture.md, "One OS seam"). Checks every .cc and .h under
# src/ except src/os/, tests (*_test.cc, *test_util.h, test_corpus.h) and the
# helper binaries under */tools/, after removing comments and string
# literals, for a call to any of the POSIX / glibc / Linux functions below.
# A call found prints as FILE:LINE: text, and the test fails.
# Usage: tests/os_seam_test.sh [SRC_DIR]   (default: the repository's src/)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$root/src}

calls='open|openat|close|read|write|pread|pwrite|lseek|fstat|stat|lstat|access|unlink|rename|mkdir|rmdir'
calls+='|ftruncate|truncate|fsync|fdatasync|flock|fcntl|ioctl|mmap|munmap|madvise|mlock|fork|vfork'
calls+='|execv|execve|execvp|execl|execlp|waitpid|waitid|wait|kill|killpg|getpid|getppid|setsid|setpgid'
calls+='|pipe|pipe2|dup|dup2|socket|socketpair|bind|listen|accept|accept4|connect|send|sendto|sendmsg'
calls+='|recv|recvfrom|recvmsg|setsockopt|getsockopt|shutdown|poll|ppoll|epoll_create1|epoll_ctl|epoll_wait'
calls+='|select|signal|sigaction|sigprocmask|raise|alarm|dlopen|dlsym|dlclose|dlerror|getenv|setenv|unsetenv'
calls+='|malloc_trim|mallopt|mallinfo2|sysconf|sched_setaffinity|sched_getaffinity|prctl|getrusage'
calls+='|nanosleep|usleep|fopen|fdopen|popen|pclose|mkstemp|opendir|readdir|isatty|fileno|syscall'
calls+='|gethostname|getaddrinfo|freeaddrinfo|inet_ntop|inet_pton|getifaddrs|shm_open|shm_unlink|memfd_create'
calls+='|pidfd_open|eventfd|timerfd_create|clock_nanosleep'
# A call: the name not preceded by a letter, digit, '_', '.', '>' (a member)
# or a namespace other than the global one and std:: (the C library's).
pattern="(^|[^A-Za-z0-9_.>:]|[^A-Za-z0-9_:]::|^::|std::)($calls)[[:space:]]*\\("

found=0
while IFS= read -r -d '' file; do
  case "$file" in
    "$src"/os/*|*_test.cc|*test_util.h|*/test_corpus.h|*/tools/*) continue ;;
  esac
  # Comments and string literals out (line by line: block comments that
  # span lines are rare here and hold prose only).
  hits=$(sed -E 's/"([^"\\]|\\.)*"/""/g; s#//.*$##; s#/\*.*\*/##g' "$file" | grep -nE "$pattern")
  if [ -n "$hits" ]; then
    while IFS= read -r hit; do echo "${file#"$root"/}:$hit"; done <<<"$hits"
    found=1
  fi
done < <(find "$src" \( -name '*.cc' -o -name '*.h' \) -print0 | sort -z)

if [ "$found" -ne 0 ]; then
  echo "FAIL: operating-system calls outside src/os/ (give os/ a function for them)"
  exit 1
fi
echo "os seam: no operating-system call outside src/os/"
